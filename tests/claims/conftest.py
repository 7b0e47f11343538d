"""Admin fixtures for the claims tests (the operator console's)."""

from tests.admin.conftest import (  # noqa: F401 - fixtures
    _fast_password_hasher,
    console,
    operator,
)
