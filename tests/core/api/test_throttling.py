"""Throttling: counts in the shared cache (CACHES["throttle"]), 429 with
Retry-After in the one shape; callers without credentials and with wrong ones
are counted by address."""

from __future__ import annotations

import pytest
from django.core.cache import caches
from django.core.management import call_command
from rest_framework.test import APIClient

from tests.core.api.conftest import assert_error_shape, role_client
from tests.factories import make_token

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


def test_callers_without_credentials_are_throttled_by_address(settings):
    settings.CODEX_API_ANON_RATE = "2/minute"
    client = APIClient(REMOTE_ADDR="203.0.113.5")
    for _ in range(2):
        assert_error_shape(client.get("/api/tasks/"), 401, "not_authenticated")
    assert_error_shape(client.get("/api/tasks/"), 429, "throttled")
    other = APIClient(REMOTE_ADDR="198.51.100.5")
    assert other.get("/api/tasks/").status_code == 401


def test_bad_credentials_are_throttled_by_address(settings, api_user):
    settings.CODEX_API_FAILED_AUTH_RATE = "3/minute"
    _, key = make_token(api_user)
    attacker = APIClient(REMOTE_ADDR="203.0.113.9")
    for guess in range(3):
        attacker.credentials(HTTP_AUTHORIZATION=f"Token guess-{guess}")
        assert_error_shape(attacker.get("/api/tasks/"), 401, "authentication_failed")
    attacker.credentials(HTTP_AUTHORIZATION="Token guess-4")
    response = attacker.get("/api/tasks/")
    assert_error_shape(response, 429, "throttled")
    assert int(response["Retry-After"]) > 0
    # Past the limit the token is not even looked at, a right one included.
    attacker.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    assert attacker.get("/api/tasks/").status_code == 429
    # The same key from another address works.
    client = APIClient(REMOTE_ADDR="198.51.100.9")
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    assert client.get("/api/tasks/").status_code == 200


class RoundRobinCaches:
    """Two web processes: each request's throttle counts through the next of
    two separate connections to the database cache."""

    def __init__(self):
        self.connections = [caches.create_connection("throttle") for _ in range(2)]
        self.calls = 0

    def __getitem__(self, alias):
        assert alias == "throttle"
        self.calls += 1
        return self.connections[self.calls % 2]


@pytest.fixture
def database_cache(settings):
    settings.CACHES = {
        **settings.CACHES,
        "throttle": {
            "BACKEND": "codex.core.store.db_cache.UpsertDatabaseCache",
            "LOCATION": "codex_throttle_cache",
        },
    }
    call_command("createcachetable", "codex_throttle_cache", verbosity=0)
    yield
    caches["throttle"].clear()


def test_two_processes_sharing_the_cache_count_together(
    settings, api_client, database_cache, monkeypatch
):
    settings.CODEX_API_USER_RATE = "4/minute"
    two = RoundRobinCaches()
    assert two.connections[0] is not two.connections[1]
    monkeypatch.setattr("codex.core.api.throttles.caches", two)
    for _ in range(4):
        assert api_client.get("/api/tasks/").status_code == 200
    assert_error_shape(api_client.get("/api/tasks/"), 429, "throttled")
    assert two.calls >= 5  # both connections were used


def test_a_forged_forwarded_for_header_does_not_reset_the_count(settings):
    settings.CODEX_API_ANON_RATE = "2/minute"
    client = APIClient(REMOTE_ADDR="203.0.113.5")
    for n in range(2):
        client.get("/api/tasks/", HTTP_X_FORWARDED_FOR=f"10.0.0.{n}")
    response = client.get("/api/tasks/", HTTP_X_FORWARDED_FOR="10.0.0.99")
    assert_error_shape(response, 429, "throttled")
