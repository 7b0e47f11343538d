"""GitHub's html_url keeps the owner's case; intake stores it lowercase."""

from __future__ import annotations

import pytest

from codex.webhooks.handlers import find_repository
from tests.factories import make_repository
from tests.webhooks.conftest import HELLO_WORLD, load

pytestmark = pytest.mark.django_db


def test_a_delivery_finds_the_lowercase_owner_row():
    payload = load("issues", "labeled.payload.json")
    assert payload["repository"]["html_url"] == HELLO_WORLD  # Codertocat/...
    stored = make_repository("https://github.com/codertocat/Hello-World")

    assert find_repository(payload) == stored


def test_a_row_stored_with_the_owners_case_is_still_found():
    stored = make_repository(HELLO_WORLD)
    assert find_repository(load("issues", "labeled.payload.json")) == stored


def test_a_local_repository_is_found_whatever_github_is_configured_as(settings):
    # A local-forge payload (the benchmarks', a local forge's) names a file://
    # URL; a GITHUB_BASE_URL that is no usable GitHub must not break the lookup.
    settings.GITHUB_BASE_URL = "http://127.0.0.1:9"
    stored = make_repository("file:///srv/forge/sample.git")
    payload = load("issues", "labeled.payload.json")
    payload["repository"]["html_url"] = "file:///srv/forge/sample.git"
    assert find_repository(payload) == stored
    payload["repository"]["html_url"] = HELLO_WORLD
    assert find_repository(payload) is None
