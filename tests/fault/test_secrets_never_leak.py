"""Secrets (credentials, webhook secret, a secret Setting, an API token key)
appear in no API response, admin page, event, log line, or agent command
environment; configuration secrets are encrypted at rest, API tokens hashed."""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path

import anthropic
import httpx2
import pytest
import responses
from cryptography.fernet import Fernet
from django.db import connection
from rest_framework.test import APIClient

from agents.claude import claude_client
from agents.sandbox import Sandbox
from codex.accounts.models import ApiToken, hash_key
from codex.configuration.models import Setting
from codex.core.errors import ClassifiedFailure
from codex.events.models import Event
from codex.tasks.jobs import advance_task
from integrations.github.client import github_client, github_errors
from integrations.jail import CA_BUNDLE_VARIABLES
from tests.core.api.resources import make_world
from tests.factories import make_token

pytestmark = pytest.mark.django_db

GITHUB_TOKEN = "ghp_FAULTSUITEgithubTOKEN0000000000000001"
ANTHROPIC_KEY = "sk-ant-FAULTSUITEanthropicKEY000000000002"
WEBHOOK_SECRET = "whsec-FAULTSUITE-webhook-secret-0003"
SETTING_SECRET = "ghp_FAULTSUITEsettingSECRET00000000004"


@pytest.fixture
def secrets(settings, monkeypatch, role_users):
    settings.CODEX_FERNET_KEYS = [Fernet.generate_key().decode()]
    settings.CODEX_CREDENTIALS = {"github": [GITHUB_TOKEN], "claude": [ANTHROPIC_KEY]}
    settings.GITHUB_WEBHOOK_SECRET = WEBHOOK_SECRET
    # What a worker's process environment holds in production.
    monkeypatch.setenv("GITHUB_TOKEN", GITHUB_TOKEN)
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
    monkeypatch.setenv("GITHUB_WEBHOOK_SECRET", WEBHOOK_SECRET)
    setting = Setting.objects.put("github.token", SETTING_SECRET, actor="user:alice")
    token, key = make_token(role_users["operator"])
    return {
        "values": [GITHUB_TOKEN, ANTHROPIC_KEY, WEBHOOK_SECRET, SETTING_SECRET, key],
        "setting": setting,
        "token": token,
        "key": key,
    }


def assert_clean(text: str, values, where: str) -> None:
    for value in values:
        assert value not in text, f"a secret leaked into {where}"
        assert value[-12:] not in text, f"a secret's tail leaked into {where}"


API_LISTS = [
    "/api/tasks/",
    "/api/escalations/",
    "/api/repositories/",
    "/api/agent-instances/",
    "/api/agent-runs/",
    "/api/claims/",
    "/api/backlog-runs/",
    "/api/child-reports/",
    "/api/child-analyses/",
    "/api/schema/",
]


def test_no_secret_in_api_admin_events_or_logs(secrets, role_users, caplog, settings):
    caplog.set_level(logging.DEBUG)
    world = make_world()
    values = secrets["values"]
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {secrets['key']}")
    t = world.task.task_id
    urls = [
        *API_LISTS,
        f"/api/tasks/{t}/",
        f"/api/tasks/{t}/envelope/",
        f"/api/tasks/{t}/issue-state/",
        f"/api/tasks/{t}/events/",
        f"/api/tasks/{t}/artifacts/",
        f"/api/tasks/{t}/reports/",
    ]
    for url in urls:
        response = client.get(url)
        assert response.status_code == 200, url
        assert_clean(response.content.decode(), values, url)
    created = client.post(
        "/api/tasks/",
        {
            "repository": "https://github.com/acme/secret-scan",
            "title": "Scan",
            "description": "d",
            "priority": "low",
            "acceptance_criteria": "- ok",
        },
        format="json",
    )
    assert created.status_code == 201
    assert_clean(created.content.decode(), values, "POST /api/tasks/")

    # A pipeline step (the unconfigured runner blocks the task with a reason).
    advance_task(world.task.task_id)

    # The operator console.
    from django.test import Client

    console = Client()
    console.force_login(role_users["operator"])
    setting, token = secrets["setting"], secrets["token"]
    pages = [
        "/admin/tasks/task/",
        f"/admin/tasks/task/{world.task.pk}/change/",
        "/admin/configuration/setting/",
        f"/admin/configuration/setting/{setting.pk}/change/",
        "/admin/configuration/activecredential/",
        "/admin/github/githubtoken/",
        "/admin/accounts/apitoken/",
        f"/admin/accounts/apitoken/{token.pk}/change/",
        "/admin/events/event/",
        "/admin/django_q/ormq/",
    ]
    for url in pages:
        response = console.get(url)
        assert response.status_code == 200, url
        assert_clean(response.content.decode(), values, url)

    # Calls that surely log, each made with a secret in hand.
    drive_logged_failures(secrets, settings)

    for event in Event.objects.all():
        text = f"{event.reason} {json.dumps(event.data, default=str)}"
        assert_clean(text, values, f"event {event.pk}")
    logged = "\n".join(
        f"{record.name} {record.getMessage()} {record.args!r} {record.exc_text or ''}"
        for record in caplog.records
    )
    # A scan of nothing proves nothing: the failures above must have logged.
    assert caplog.records, "nothing was logged: the scan would check nothing"
    for expected in (
        "Unauthorized: /api/webhooks/github/",  # the bad signature
        "github call failed",  # the rejected token
        "api.anthropic.test",  # the rejected key (the SDK's request log)
    ):
        assert expected in logged, f"no log line for {expected!r}"
    assert_clean(logged, values, "the log")


def drive_logged_failures(secrets, settings) -> None:
    """A webhook with a bad signature, a GitHub call rejected with the token, a
    model call rejected with the key: each logs, none may log the secret."""
    from django.test import Client

    body = json.dumps({"action": "opened", "secret": "guess"}).encode()
    response = Client().post(
        "/api/webhooks/github/",
        body,
        content_type="application/json",
        HTTP_X_GITHUB_EVENT="issues",
        HTTP_X_GITHUB_DELIVERY="fault-secrets-1",
        HTTP_X_HUB_SIGNATURE_256="sha256=" + "0" * 64,
    )
    assert response.status_code == 401
    assert_clean(response.content.decode(), secrets["values"], "the webhook's 401")

    settings.GITHUB_BASE_URL = "https://api.github.com"
    settings.GITHUB_APP_ID = ""
    settings.CODEX_GITHUB_SECONDS_BETWEEN_REQUESTS = None
    settings.CODEX_GITHUB_SECONDS_BETWEEN_WRITES = None
    settings.CODEX_GITHUB_RETRY_BACKOFF = 0
    with responses.RequestsMock() as github:
        github.get(
            "https://api.github.com:443/repos/acme/secret-scan",
            status=401,
            json={"message": "Bad credentials"},
        )
        with pytest.raises(ClassifiedFailure), github_errors:
            github_client().get_repo("acme/secret-scan").update()
        sent = github.calls[0].request.headers["Authorization"]
    # The token saved in the console comes before the environment's.
    assert SETTING_SECRET in sent, "the call was made with the stored token"

    credentials: list[str] = []

    def rejected(request: httpx2.Request) -> httpx2.Response:
        credentials.append(
            request.headers.get("authorization", "")
            + request.headers.get("x-api-key", "")
        )
        return httpx2.Response(
            401,
            json={
                "type": "error",
                "error": {"type": "authentication_error", "message": "invalid key"},
            },
            headers={"request-id": "req_fault_secrets"},
        )

    settings.ANTHROPIC_BASE_URL = "https://api.anthropic.test"
    client = claude_client(
        http_client=anthropic.DefaultHttpxClient(
            transport=httpx2.MockTransport(rejected)
        )
    )
    with pytest.raises(ClassifiedFailure):
        client.send(messages=[{"role": "user", "content": "hello"}])
    client.close()
    assert credentials and ANTHROPIC_KEY in credentials[0], "made with the key"


def test_configuration_secrets_are_encrypted_at_rest(secrets):
    setting = secrets["setting"]
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT value FROM {Setting._meta.db_table} WHERE id = %s", [setting.pk]
        )
        (column,) = cursor.fetchone()
    assert SETTING_SECRET not in column
    assert Setting.objects.get(pk=setting.pk).plaintext() == SETTING_SECRET


def test_api_tokens_are_stored_hashed(secrets):
    token, key = secrets["token"], secrets["key"]
    row = ApiToken.objects.filter(pk=token.pk).values().get()
    assert row["key_hash"] == hash_key(key)
    for name, value in row.items():
        if isinstance(value, str):
            assert key not in value, name
            assert len(value) < len(key) or value == row["key_hash"], name


def test_a_sandboxed_command_sees_no_secret(secrets, tmp_path, settings):
    worktree = tmp_path / "worktree"
    worktree.mkdir()
    settings.CODEX_SANDBOX_PATH = f"{Path(sys.executable).parent}:{os.defpath}"
    sandbox = Sandbox(worktree, allowed_commands=["python"])
    result = sandbox.run_command(
        ["python", "-c", "import os, json; print(json.dumps(dict(os.environ)))"]
    )
    assert result.exit_code == 0, result.output
    environment = json.loads(result.output)
    assert set(environment) <= {
        *("PATH", "HOME", "LANG", "LC_CTYPE", "PWD", "TMPDIR", "USER", "CI"),
        "PYTHONDONTWRITEBYTECODE",
        # The machine's CA bundle for pip, Node and the rest (a path, no secret).
        *CA_BUNDLE_VARIABLES,
    }
    assert_clean(result.output, secrets["values"], "the command's environment")
