"""Fixtures for API tests: a user with a token and a client that sends it."""

from __future__ import annotations

import pytest
from django.core.cache import cache
from drf_spectacular.settings import patched_settings
from rest_framework.test import APIClient

from codex.core.api.schema import OPENAPI_SETTINGS
from tests.factories import make_token, make_user


@pytest.fixture(autouse=True)
def _fresh_throttle_counts():
    """Throttle counts live in the cache, which outlives a test's database."""
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def openapi(settings):
    """drf-spectacular as codex.settings will have it (the lead adds these lines;
    until then the tests install it themselves)."""
    for app in ("drf_spectacular", "drf_spectacular_sidecar"):
        if app not in settings.INSTALLED_APPS:
            settings.INSTALLED_APPS = [*settings.INSTALLED_APPS, app]
    with patched_settings(OPENAPI_SETTINGS):
        yield


@pytest.fixture
def api_user(db):
    """A team member: creates tasks and reads every one (an integrator reads
    only its own: tests/tasks/api/test_it_shows_an_integrator_only_its_own_tasks.py)."""
    return make_user("member", role="team")


@pytest.fixture
def api_client(api_user):
    return token_client(api_user)


def token_client(user) -> APIClient:
    """An API client that authenticates as `user` with a fresh token."""
    _, key = make_token(user)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


def assert_error_shape(response, status: int, code: str | None = None) -> dict:
    """The one error shape of codex.core.api.errors; returns the inner error."""
    assert response.status_code == status, response.content
    body = response.json()
    assert set(body) == {"error"}
    error = body["error"]
    assert {"code", "message", "fields"} <= set(error)
    assert isinstance(error["message"], str) and error["message"]
    if code is not None:
        assert error["code"] == code
    return error


def results(response) -> list[dict]:
    """The items of a 200 list answer (every list is paginated)."""
    assert response.status_code == 200, response.content
    body = response.json()
    assert {"next", "previous", "results"} <= set(body)
    return body["results"]


def role_client(role: str | None, username: str | None = None) -> APIClient:
    """A token client for a user of `role` (operator, team, integrator), or an
    unauthenticated client for None."""
    from django.contrib.auth.models import Group

    if role is None:
        return APIClient()
    user = make_user(username, is_staff=role == "operator")
    if role in ("team", "integrator"):
        group, _ = Group.objects.get_or_create(name=role)
        user.groups.add(group)
    return token_client(user)
