"""Throttling: counts in the shared cache, 429 with Retry-After in the one shape."""

from __future__ import annotations

import pytest

from tests.api.conftest import assert_error_shape, role_client

pytestmark = pytest.mark.django_db


def test_users_past_their_rate_get_429_with_retry_after(settings, api_client):
    settings.CODEX_API_USER_RATE = "3/minute"
    for _ in range(3):
        assert api_client.get("/api/tasks/").status_code == 200
    response = api_client.get("/api/tasks/")
    error = assert_error_shape(response, 429, "throttled")
    assert int(response["Retry-After"]) > 0
    assert error["retry_after"] == response["Retry-After"]
    # Another user has a budget of their own.
    assert role_client("integrator").get("/api/tasks/").status_code == 200


def test_posts_count_too(settings, api_client):
    settings.CODEX_API_USER_RATE = "1/minute"
    assert api_client.post("/api/tasks/", {}, format="json").status_code == 400
    assert_error_shape(api_client.post("/api/tasks/", {}, format="json"), 429)


@pytest.mark.usefixtures("openapi")
def test_anonymous_callers_of_the_public_schema_are_throttled(settings, client):
    settings.CODEX_API_ANON_RATE = "1/minute"
    assert client.get("/api/docs/").status_code == 200
    response = client.get(
        "/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json"
    )
    assert_error_shape(response, 429, "throttled")
    assert response["Retry-After"]
