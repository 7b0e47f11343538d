"""Fixtures for configuration tests: fixed Fernet keys and a logged-in operator."""

from __future__ import annotations

import pytest

from tests.configuration.factories import KEY_A


@pytest.fixture
def console(console, settings):
    """The logged-in admin client, with a fixed encryption key."""
    settings.CODEX_FERNET_KEYS = KEY_A
    return console
