"""Event, escalation, repository and API token pages of the operator console."""

from __future__ import annotations

import re

import pytest
from django.contrib.messages import get_messages
from django.urls import reverse
from rest_framework.test import APIClient

from codex.accounts.models import ApiToken, hash_key
from codex.events.models import Event
from codex.repositories.models import Repository
from codex.tasks.models import Escalation
from tests.factories import make_repository, make_task, make_token, put_in_state

pytestmark = pytest.mark.django_db


@pytest.fixture
def escalation(db) -> Escalation:
    task = put_in_state(make_task(), status="in_progress", phase="intake")
    task.perform(
        "escalate", by="worker:x", reason="the request is ambiguous", questions=["Q?"]
    )
    return task.escalations.get()


def test_event_pages(console):
    task = make_task()
    event = task.events.get()
    changelist = console.get(reverse("admin:events_event_changelist"))
    assert changelist.status_code == 200
    assert task.task_id in changelist.content.decode()
    filtered = console.get(reverse("admin:events_event_changelist"), {"kind": "lease"})
    assert filtered.status_code == 200
    assert list(filtered.context["cl"].result_list) == []
    detail = console.get(reverse("admin:events_event_change", args=[event.pk]))
    assert detail.status_code == 200
    assert "task created" in detail.content.decode()


def test_events_cannot_be_added_changed_or_deleted(console):
    event = make_task().events.get()
    assert console.get(reverse("admin:events_event_add")).status_code == 403
    delete = reverse("admin:events_event_delete", args=[event.pk])
    assert console.post(delete, {"post": "yes"}).status_code == 403
    change = reverse("admin:events_event_change", args=[event.pk])
    response = console.post(change, {"reason": "rewritten"})
    assert response.status_code == 403
    assert Event.objects.get(pk=event.pk).reason == "task created"


def test_escalation_pages(console, escalation):
    changelist = console.get(reverse("admin:tasks_escalation_changelist"))
    assert changelist.status_code == 200
    assert escalation.task.task_id in changelist.content.decode()
    open_only = console.get(
        reverse("admin:tasks_escalation_changelist"), {"resolved_at__isnull": "True"}
    )
    assert open_only.status_code == 200
    detail = console.get(reverse("admin:tasks_escalation_change", args=[escalation.pk]))
    assert detail.status_code == 200
    assert "the request is ambiguous" in detail.content.decode()
    assert console.get(reverse("admin:tasks_escalation_add")).status_code == 403


def test_escalated_task_change_page_lists_the_escalation(console, escalation):
    task = escalation.task
    response = console.get(reverse("admin:tasks_task_change", args=[task.pk]))
    assert response.status_code == 200
    assert "the request is ambiguous" in response.content.decode()


def test_repository_pages(console):
    repository = make_repository("https://github.com/acme/console")
    changelist = console.get(reverse("admin:repositories_repository_changelist"))
    assert changelist.status_code == 200
    assert "https://github.com/acme/console" in changelist.content.decode()
    change = console.get(
        reverse("admin:repositories_repository_change", args=[repository.pk])
    )
    assert change.status_code == 200
    add = console.get(reverse("admin:repositories_repository_add"))
    assert add.status_code == 200


def test_repository_add_normalizes_the_url(console):
    response = console.post(
        reverse("admin:repositories_repository_add"),
        {
            "url": "https://GitHub.com/acme/added.git",
            "default_branch": "main",
            "accepts_tasks": "on",
            "merge_gate": "auto",  # the select's default, as a browser sends it
            "worktree_quota_mb": "1024",  # the field's default, likewise
        },
    )
    assert response.status_code == 302, response.content.decode()[:3000]
    assert Repository.objects.get().url == "https://github.com/acme/added"


def test_api_token_pages(console, operator):
    token, key = make_token(operator)
    changelist = console.get(reverse("admin:accounts_apitoken_changelist"))
    assert changelist.status_code == 200
    html = changelist.content.decode()
    assert token.prefix in html
    assert key not in html
    assert token.key_hash not in html
    detail = console.get(reverse("admin:accounts_apitoken_change", args=[token.pk]))
    assert detail.status_code == 200
    assert key not in detail.content.decode()
    assert console.get(reverse("admin:accounts_apitoken_add")).status_code == 200


def test_creating_a_token_shows_the_key_once(console, operator):
    response = console.post(
        reverse("admin:accounts_apitoken_add"),
        {"user": operator.pk, "name": "ci pipeline"},
    )
    assert response.status_code == 302, response.content.decode()[:3000]
    shown = [str(m) for m in get_messages(response.wsgi_request)]
    keys = [
        match.group(1)
        for message in shown
        if (match := re.search(r"not shown again: (\S+)$", message))
    ]
    assert len(keys) == 1, shown
    key = keys[0]
    token = ApiToken.objects.get()
    assert token.name == "ci pipeline"
    assert token.user == operator
    assert token.key_hash == hash_key(key) != key
    assert token.prefix == key[: len(token.prefix)]
    # The key works against the API.
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    assert client.get("/api/tasks/").status_code == 200
    # The page after the redirect shows it once; later pages do not.
    shown_page = console.get(response["Location"])
    assert shown_page.content.decode().count(key) == 1
    later = console.get(reverse("admin:accounts_apitoken_changelist"))
    assert key not in later.content.decode()


def test_revoke_tokens_action(console, operator):
    token, key = make_token(operator)
    response = console.post(
        reverse("admin:accounts_apitoken_changelist"),
        {"action": "revoke_tokens", "_selected_action": [token.pk], "index": "0"},
    )
    assert response.status_code == 302
    token.refresh_from_db()
    assert token.revoked_at is not None
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    assert client.get("/api/tasks/").status_code == 401


def test_admin_index_renders(console):
    response = console.get(reverse("admin:index"))
    assert response.status_code == 200
    assert "Codex console" in response.content.decode()
