"""/favicon.ico is a small icon, not a 404 on every page."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db


def test_the_favicon_is_served_at_the_root(client):
    response = client.get("/favicon.ico")

    assert response.status_code == 200
    body = b"".join(response.streaming_content)
    assert body[:4] == b"\x00\x00\x01\x00"  # an ICO file
    assert len(body) < 5000


def test_the_team_pages_name_it(client):
    assert (
        '<link rel="icon" href="/favicon.ico"'
        in client.get("/accounts/login/").content.decode()
    )
