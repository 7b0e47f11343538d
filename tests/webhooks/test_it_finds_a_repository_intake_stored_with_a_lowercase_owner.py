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
