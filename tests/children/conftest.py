"""Fixtures of the fan-out tests."""

from tests.children.harness import memory_forge  # noqa: F401  (a fixture)
