"""Fixtures for notification tests: a logged-in operator."""

from __future__ import annotations

import pytest

from tests.factories import make_user


@pytest.fixture
def console(db, client, settings):
    """A test client logged in to the admin as a superuser."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    client.force_login(make_user(is_staff=True, is_superuser=True))
    return client
