"""Fixtures for API tests: a user with a token and a client that sends it."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from tests.factories import make_token, make_user


@pytest.fixture
def api_user(db):
    return make_user("integrator")


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
    """The one error shape of codex.core.api; returns the inner error."""
    assert response.status_code == status, response.content
    body = response.json()
    assert set(body) == {"error"}
    error = body["error"]
    assert {"code", "message", "fields"} <= set(error)
    assert isinstance(error["message"], str) and error["message"]
    if code is not None:
        assert error["code"] == code
    return error
