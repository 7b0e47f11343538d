"""Fixtures for configuration tests: fixed Fernet keys and a logged-in operator."""

from __future__ import annotations

import pytest

from tests.configuration.factories import KEY_A
from tests.factories import make_user


@pytest.fixture
def console(db, client, settings):
    """A test client logged in to the admin as a superuser, with a fixed key."""
    settings.CODEX_FERNET_KEYS = KEY_A
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    client.force_login(make_user(is_staff=True, is_superuser=True))
    return client
