"""The GitHub test fixtures (no network, GitHub's payload shapes)."""

from tests.integrations.github.conftest import (  # noqa: F401  (fixtures)
    github,
    github_settings,
    repository,
)
