"""GitHub test fixtures: no network, no waiting, a fixed token pair."""

from __future__ import annotations

import pytest
import responses
from django.core.cache import cache

from tests.configuration.factories import KEY_A
from tests.factories import make_repository
from tests.integrations.github.payloads import REPO_URL

TOKENS = [
    "ghp_firstTokenAAAAAAAAAAAAAAAAAAAAAAAAAA",
    "ghp_secondTokenBBBBBBBBBBBBBBBBBBBBBBBBB",
]


@pytest.fixture(autouse=True)
def github_settings(settings):
    """Token auth, no pacing, no backoff, a clean cache (no leftovers)."""
    settings.CODEX_GITHUB_SECONDS_BETWEEN_REQUESTS = None
    settings.CODEX_GITHUB_SECONDS_BETWEEN_WRITES = None
    settings.CODEX_GITHUB_RETRY_BACKOFF = 0
    settings.CODEX_CREDENTIALS = {**settings.CODEX_CREDENTIALS, "github": TOKENS}
    settings.GITHUB_APP_ID = ""
    settings.GITHUB_APP_PRIVATE_KEY = ""
    settings.GITHUB_APP_INSTALLATION_ID = ""
    settings.GITHUB_BASE_URL = "https://api.github.com"
    settings.CODEX_BOT_LOGIN = "codex[bot]"
    settings.CODEX_FERNET_KEYS = KEY_A
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def github():
    """responses over requests: an unexpected request fails the test."""
    with responses.RequestsMock(assert_all_requests_are_fired=True) as mock:
        yield mock


@pytest.fixture
def repository(db):
    """The repository of GitHub's own example payloads."""
    return make_repository(REPO_URL)
