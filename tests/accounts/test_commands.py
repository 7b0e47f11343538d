"""Management commands ensure_admin and create_api_token."""

from __future__ import annotations

import re
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from codex.accounts.models import ApiToken, hash_key
from tests.factories import make_user

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch, settings):
    monkeypatch.delenv("CODEX_ADMIN_PASSWORD", raising=False)
    monkeypatch.delenv("CODEX_ADMIN_USERNAME", raising=False)


def run(*args, **options) -> str:
    out = StringIO()
    call_command(*args, stdout=out, **options)
    return out.getvalue()


def superusers():
    return get_user_model().objects.filter(is_superuser=True)


def test_ensure_admin_uses_the_password_from_the_environment(monkeypatch):
    monkeypatch.setenv("CODEX_ADMIN_PASSWORD", "s3cret-from-env!")
    output = run("ensure_admin")
    [admin] = superusers()
    assert admin.username == "admin"
    assert admin.is_staff and admin.is_active
    assert admin.check_password("s3cret-from-env!")
    assert "s3cret-from-env!" not in output
    assert "CODEX_ADMIN_PASSWORD" in output


def test_ensure_admin_password_logs_in(client, monkeypatch):
    monkeypatch.setenv("CODEX_ADMIN_PASSWORD", "s3cret-from-env!")
    run("ensure_admin")
    # Through the sign-in page: django-axes needs the request to count failures.
    credentials = {"username": "admin", "password": "wrong"}
    assert client.post("/admin/login/", credentials).status_code == 200
    credentials["password"] = "s3cret-from-env!"
    assert client.post("/admin/login/", credentials).status_code == 302
    assert client.get("/admin/").status_code == 200


def test_ensure_admin_honours_the_username(monkeypatch):
    monkeypatch.setenv("CODEX_ADMIN_USERNAME", "root-operator")
    monkeypatch.setenv("CODEX_ADMIN_PASSWORD", "s3cret-from-env!")
    run("ensure_admin")
    assert [u.username for u in superusers()] == ["root-operator"]


def test_ensure_admin_generates_and_prints_a_password():
    output = run("ensure_admin")
    match = re.search(r"with password: (\S+)", output)
    assert match, output
    password = match.group(1)
    assert len(password) >= 12
    [admin] = superusers()
    assert admin.check_password(password)
    assert "shown only once" in output


def test_ensure_admin_generates_a_different_password_each_time():
    first = re.search(r"password: (\S+)", run("ensure_admin")).group(1)
    superusers().delete()
    second = re.search(r"password: (\S+)", run("ensure_admin")).group(1)
    assert first != second


def test_ensure_admin_second_run_creates_nothing(monkeypatch):
    monkeypatch.setenv("CODEX_ADMIN_PASSWORD", "s3cret-from-env!")
    run("ensure_admin")
    monkeypatch.setenv("CODEX_ADMIN_PASSWORD", "another-password!")
    output = run("ensure_admin")
    assert "exists already" in output
    assert "password" not in output.lower()
    assert get_user_model().objects.count() == 1
    assert superusers().get().check_password("s3cret-from-env!")


def test_ensure_admin_counts_any_existing_superuser():
    make_user("boss", is_superuser=True, is_staff=True)
    assert "exists already" in run("ensure_admin")
    assert not get_user_model().objects.filter(username="admin").exists()


def test_ensure_admin_ignores_non_superusers():
    make_user("admin-lookalike", is_staff=True)
    run("ensure_admin")
    assert superusers().get().username == "admin"


def test_create_api_token_prints_a_working_key():
    user = make_user("bot")
    key = run("create_api_token", "bot").strip()
    assert re.fullmatch(r"[A-Za-z0-9_-]{32,}", key), key
    token = ApiToken.objects.get(user=user)
    assert token.name == "command line"
    assert token.key_hash == hash_key(key) != key
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    response = client.get("/api/tasks/")
    assert response.status_code == 200
    assert client.post("/api/tasks/", {}, format="json").status_code == 400


def test_create_api_token_with_a_name():
    make_user("bot")
    run("create_api_token", "bot", "--name", "nightly sync")
    assert ApiToken.objects.get().name == "nightly sync"


def test_create_api_token_issues_a_new_key_each_time():
    make_user("bot")
    first = run("create_api_token", "bot").strip()
    second = run("create_api_token", "bot").strip()
    assert first != second
    assert ApiToken.objects.count() == 2


def test_create_api_token_for_an_unknown_user_fails():
    with pytest.raises(CommandError, match="nobody"):
        run("create_api_token", "nobody")
    assert not ApiToken.objects.exists()
