"""/metrics and /healthz/workers name hosts, process ids and what blocks the
installation: only a scraper with the metrics token (CODEX_METRICS_TOKEN)
or an operator signed in to the console may read them, each refusal with its
reason; the token works by IP, as scrapers come."""

from __future__ import annotations

import pytest

from tests.factories import make_user
from tests.monitoring.conftest import TOKEN
from tests.test_settings_env import load_settings

pytestmark = pytest.mark.django_db

PATHS = ("/metrics", "/healthz/workers")


@pytest.fixture(autouse=True)
def token(settings):
    settings.CODEX_METRICS_TOKEN = TOKEN


@pytest.mark.parametrize("path", PATHS)
def test_nobody_is_refused_with_how_to_get_in(client, path):
    response = client.get(path)
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer")
    assert "CODEX_METRICS_TOKEN" in response.content.decode()


@pytest.mark.parametrize("path", PATHS)
def test_a_wrong_token_or_scheme_is_refused(client, path):
    for header in (f"Bearer {TOKEN}x", f"Token {TOKEN}", "Bearer ", "Basic abc"):
        response = client.get(path, HTTP_AUTHORIZATION=header, HTTP_HOST="10.0.0.9")
        assert response.status_code == 401, header


@pytest.mark.parametrize("path", PATHS)
def test_no_configured_token_lets_no_token_in(client, settings, path):
    settings.CODEX_METRICS_TOKEN = ""
    response = client.get(path, HTTP_AUTHORIZATION="Bearer anything-at-all-here")
    assert response.status_code == 401
    assert "no metrics token is configured" in response.content.decode()


@pytest.mark.parametrize("path", PATHS)
def test_the_token_works_by_ip(client, path):
    response = client.get(
        path, HTTP_AUTHORIZATION=f"Bearer {TOKEN}", HTTP_HOST="10.0.0.9"
    )
    assert response.status_code in (200, 503)  # 503: /healthz/workers, no worker


@pytest.mark.parametrize("path", PATHS)
def test_a_team_member_is_refused_and_an_operator_let_in(client, path):
    client.force_login(make_user("carol", role="team"))
    assert client.get(path).status_code == 403
    client.force_login(make_user("olga", is_staff=True))
    assert client.get(path).status_code in (200, 503)
    # A session never skips the host check.
    assert client.get(path, HTTP_HOST="10.0.0.9").status_code == 400


def test_a_short_token_stops_start_up():
    result = load_settings(CODEX_METRICS_TOKEN="short")
    assert result.returncode != 0
    assert "CODEX_METRICS_TOKEN must be at least 24 characters" in result.stderr


def test_writes_are_refused(client):
    response = client.post("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert response.status_code == 405
