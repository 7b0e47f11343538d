"""The API fixtures (tests/core/api/conftest.py) for the tasks API's tests."""

from tests.core.api.conftest import (  # noqa: F401
    _fresh_throttle_counts,
    api_client,
    api_user,
    openapi,
)
