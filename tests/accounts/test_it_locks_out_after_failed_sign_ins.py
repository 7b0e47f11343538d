"""Sign-in lockout (django-axes): failed passwords are counted per account and
address in the database; past the limit the right password is refused with a
message; an operator unlocks the pair in the console."""

from __future__ import annotations

import pytest
from axes.models import AccessAttempt
from django.test import Client

from tests.factories import make_user

pytestmark = pytest.mark.django_db

PASSWORD = "pw-12345!"  # what tests.factories.make_user sets
LOGIN_PAGES = ("/accounts/login/", "/admin/login/")


@pytest.fixture(autouse=True)
def _limit(settings):
    settings.AXES_FAILURE_LIMIT = 3


def sign_in(client, url, username, password, address="203.0.113.7"):
    return client.post(
        url, {"username": username, "password": password}, REMOTE_ADDR=address
    )


@pytest.mark.parametrize("url", LOGIN_PAGES)
def test_wrong_passwords_lock_the_account_from_that_address(url):
    make_user("dana", is_staff=True)
    client = Client()
    for _ in range(2):
        assert sign_in(client, url, "dana", "wrong").status_code == 200
    locked = sign_in(client, url, "dana", "wrong")
    assert locked.status_code == 429
    refused = sign_in(client, url, "dana", PASSWORD)
    assert refused.status_code == 429
    assert b"Too many failed sign-ins" in refused.content
    assert "_auth_user_id" not in client.session
    # The count is in the database: any worker or machine sees it.
    attempt = AccessAttempt.objects.get(username="dana")
    assert attempt.failures_since_start >= 3
    assert attempt.ip_address == "203.0.113.7"


def test_the_lock_is_per_account_and_address_pair():
    make_user("dana")
    make_user("erin")
    client = Client()
    for _ in range(3):
        sign_in(client, "/accounts/login/", "dana", "wrong")
    assert sign_in(client, "/accounts/login/", "dana", PASSWORD).status_code == 429
    # Another account from the same address, and the same account from
    # another address, still sign in.
    assert sign_in(Client(), "/accounts/login/", "erin", PASSWORD).status_code == 302
    other = sign_in(Client(), "/accounts/login/", "dana", PASSWORD, "198.51.100.9")
    assert other.status_code == 302


def test_an_operator_unlocks_in_the_console(console):
    make_user("dana")
    client = Client()
    for _ in range(3):
        sign_in(client, "/accounts/login/", "dana", "wrong")
    attempt = AccessAttempt.objects.get(username="dana")
    listing = console.get("/admin/axes/accessattempt/")
    assert listing.status_code == 200
    assert b"dana" in listing.content
    response = console.post(
        f"/admin/axes/accessattempt/{attempt.pk}/delete/", {"post": "yes"}
    )
    assert response.status_code == 302
    assert not AccessAttempt.objects.filter(username="dana").exists()
    assert sign_in(client, "/accounts/login/", "dana", PASSWORD).status_code == 302


def test_a_successful_sign_in_resets_the_count():
    make_user("dana")
    client = Client()
    for _ in range(2):
        sign_in(client, "/accounts/login/", "dana", "wrong")
    assert sign_in(client, "/accounts/login/", "dana", PASSWORD).status_code == 302
    for _ in range(2):
        sign_in(Client(), "/accounts/login/", "dana", "wrong")
    assert sign_in(Client(), "/accounts/login/", "dana", PASSWORD).status_code == 302


def test_a_forged_forwarded_for_header_does_not_escape_the_lock():
    make_user("dana")
    client = Client()
    for n in range(3):
        client.post(
            "/accounts/login/",
            {"username": "dana", "password": "wrong"},
            REMOTE_ADDR="203.0.113.7",
            HTTP_X_FORWARDED_FOR=f"10.0.0.{n}",
        )
    response = client.post(
        "/accounts/login/",
        {"username": "dana", "password": PASSWORD},
        REMOTE_ADDR="203.0.113.7",
        HTTP_X_FORWARDED_FOR="10.0.0.99",
    )
    assert response.status_code == 429


def test_behind_a_proxy_the_forwarded_address_is_locked(settings):
    settings.CODEX_PROXY_COUNT = 1
    make_user("dana")
    for _ in range(3):
        Client().post(
            "/accounts/login/",
            {"username": "dana", "password": "wrong"},
            REMOTE_ADDR="10.0.0.1",
            HTTP_X_FORWARDED_FOR="203.0.113.7",
        )
    assert AccessAttempt.objects.get(username="dana").ip_address == "203.0.113.7"
    other_client = Client().post(
        "/accounts/login/",
        {"username": "dana", "password": PASSWORD},
        REMOTE_ADDR="10.0.0.1",
        HTTP_X_FORWARDED_FOR="198.51.100.4",
    )
    assert other_client.status_code == 302
