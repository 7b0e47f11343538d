"""Production settings pass `check --deploy`; responses carry the security
headers; the team forms refuse a POST without a CSRF token."""

from __future__ import annotations

import os
import re
import secrets
import string
import subprocess
import sys

import pytest
from cryptography.fernet import Fernet
from django.conf import settings as django_settings
from django.test import Client

pytestmark = pytest.mark.django_db

ACCEPTED_DEPLOY_WARNINGS = {"security.W005", "security.W021"}


def check_deploy(tmp_path) -> tuple[int, set[str], str]:
    alphabet = string.ascii_letters + string.digits + "!@#%^&*(-_=+)"
    env = {
        "PATH": os.environ.get("PATH", os.defpath),
        "HOME": str(tmp_path),
        "DEBUG": "0",
        "SECRET_KEY": "".join(secrets.choice(alphabet) for _ in range(50)),
        "CODEX_BEHIND_TLS": "1",
        "ALLOWED_HOSTS": "codex.example.com",
        "CODEX_VAR_DIR": str(tmp_path / "var"),
        "CODEX_FERNET_KEYS": Fernet.generate_key().decode(),
    }
    process = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy"],
        cwd=django_settings.BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    output = process.stdout + process.stderr
    return process.returncode, set(re.findall(r"\(([\w.]+\.[EW]\d+)\)", output)), output


def test_check_deploy_reports_only_the_hsts_policy_choices(tmp_path):
    code, issues, output = check_deploy(tmp_path)
    assert code == 0, output
    assert issues <= ACCEPTED_DEPLOY_WARNINGS, output


def test_check_deploy_is_clean(tmp_path):
    code, issues, output = check_deploy(tmp_path)
    assert code == 0 and not issues, output


def test_security_headers(client):
    response = client.get("/accounts/login/")
    assert response["X-Frame-Options"] == "DENY"
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["Referrer-Policy"] == "same-origin"
    assert response["Cross-Origin-Opener-Policy"] == "same-origin"


def test_behind_tls_cookies_are_secure_and_hsts_is_sent(settings, operator):
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    settings.SESSION_COOKIE_SECURE = True
    settings.CSRF_COOKIE_SECURE = True
    settings.SECURE_HSTS_SECONDS = 31_536_000
    client = Client()
    response = client.post(
        "/accounts/login/",
        {"username": "alice", "password": "pw-12345!"},
        HTTP_X_FORWARDED_PROTO="https",
        secure=True,
    )
    assert response.status_code == 302
    assert response.cookies["sessionid"]["secure"]
    assert response.cookies["sessionid"]["httponly"]
    page = client.get("/dashboard/", secure=True)
    assert page["Strict-Transport-Security"].startswith("max-age=31536000")


@pytest.mark.parametrize(
    ("url", "data"),
    [
        ("/tasks/new/", {"title": "x"}),
        ("/inbox/1/resolve/", {"decision": "resume"}),
        ("/accounts/logout/", {}),
        ("/admin/configuration/setting/add/", {"key": "x"}),
    ],
)
def test_forms_refuse_a_post_without_a_csrf_token(operator, url, data):
    client = Client(enforce_csrf_checks=True)
    client.force_login(operator)
    response = client.post(url, data)
    assert response.status_code == 403, url
    assert b"CSRF" in response.content
