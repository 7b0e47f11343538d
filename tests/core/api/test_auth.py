"""Authentication of the API: hashed, revocable `Authorization: Token <key>`."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from codex.accounts.models import ApiToken, hash_key
from tests.core.api.conftest import assert_error_shape
from tests.factories import make_token, make_user

pytestmark = pytest.mark.django_db

URL = "/api/tasks/"


def client_with(header: str | None) -> APIClient:
    client = APIClient()
    if header is not None:
        client.credentials(HTTP_AUTHORIZATION=header)
    return client


def test_no_header_is_401_in_the_error_shape():
    response = client_with(None).get(URL)
    error = assert_error_shape(response, 401, "not_authenticated")
    assert error["fields"] == {}
    assert response["WWW-Authenticate"] == "Token"


@pytest.mark.parametrize(
    "header",
    [
        "Token not-a-real-key",
        "Token",
        "Token two parts",
    ],
)
def test_bad_token_is_401(header):
    make_token()  # a real token exists, but is not the one sent
    error = assert_error_shape(client_with(header).get(URL), 401)
    assert error["code"] == "authentication_failed"


def test_revoked_token_is_401():
    token, key = make_token()
    assert client_with(f"Token {key}").get(URL).status_code == 200
    token.revoke()
    error = assert_error_shape(client_with(f"Token {key}").get(URL), 401)
    assert "revoked" in error["message"].lower()


def test_token_of_an_inactive_user_is_401():
    user = make_user(is_active=False)
    _, key = make_token(user)
    assert_error_shape(client_with(f"Token {key}").get(URL), 401)


def test_good_token_authenticates_and_records_last_use():
    token, key = make_token()
    assert token.last_used_at is None
    response = client_with(f"Token {key}").get(URL)
    assert response.status_code == 200
    assert "results" in response.json()
    token.refresh_from_db()
    assert token.last_used_at is not None


def test_keyword_is_case_insensitive():
    _, key = make_token()
    assert client_with(f"token {key}").get(URL).status_code == 200


def test_key_is_stored_only_as_its_hash():
    token, key = make_token()
    stored = ApiToken.objects.get(pk=token.pk)
    assert stored.key_hash != key
    assert stored.key_hash == hash_key(key)
    assert key not in {stored.key_hash, stored.prefix, stored.name}
    assert stored.prefix == key[: len(stored.prefix)]
    assert len(stored.prefix) < len(key)
    assert len(key) >= 32


def test_tokens_are_unique():
    _, first = make_token()
    _, second = make_token()
    assert first != second
