"""The console's index: the daily work first (Tasks, Escalations, Agent runs,
Repositories), records and caches in sections of their own, the configuration
last, every registered model exactly once; an Attention block above it."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.contrib import admin
from django.urls import reverse
from django.utils import timezone

from codex.core import attention
from codex.notifications.models import Notification, NotificationStatus
from codex.tasks.models import Task
from tests.factories import make_task, make_worker_cluster, put_in_state

pytestmark = pytest.mark.django_db


def sections(console) -> list[dict]:
    return console.get(reverse("admin:index")).context["app_list"]


def test_the_daily_work_comes_first_and_the_configuration_last(console):
    app_list = sections(console)

    assert app_list[0]["name"] == "Daily work"
    assert [m["object_name"] for m in app_list[0]["models"]] == [
        "Task",
        "Escalation",
        "AgentRun",
        "Repository",
    ]
    names = [section["name"] for section in app_list]
    assert names.index("Records") < names.index("Forge mirrors and caches")
    assert names[-1] == "Configuration"
    assert "Setting" in [m["object_name"] for m in app_list[-1]["models"]]


def test_every_registered_model_is_listed_exactly_once(console):
    listed = [
        f"{m['model']._meta.app_label}.{m['object_name']}"
        for section in sections(console)
        for m in section["models"]
    ]
    registered = [
        f"{model._meta.app_label}.{model.__name__}" for model in admin.site._registry
    ]

    assert sorted(listed) == sorted(registered)
    assert not [s for s in sections(console) if s["name"] == "Other"]


def test_an_app_page_keeps_its_own_models(console):
    response = console.get(reverse("admin:app_list", args=["tasks"]))

    assert response.status_code == 200
    assert response.context["app_list"][0]["app_label"] == "tasks"


def attention_text(console) -> str:
    html = console.get(reverse("admin:index")).content.decode()
    block = re.search(r'<section class="module attention".*?</section>', html, re.S)
    return block.group(0)


def test_nothing_needs_attention_says_so(console):
    make_worker_cluster()  # a worker beats, with its jail and a model key
    assert "Nothing needs attention" in attention_text(console)


def test_held_and_stuck_tasks_and_failed_notifications_are_listed(console):
    blocked = put_in_state(make_task(), status="blocked", blocked_reason="forge down")
    put_in_state(make_task(), status="escalated")
    stuck = make_task()
    Task.objects.filter(pk=stuck.pk).update(
        phase_entered_at=timezone.now() - timedelta(days=1)
    )
    failed, _ = Notification.objects.enqueue(
        notification_id="n-1", channel="operators", recipient="ops", subject="x"
    )
    Notification.objects.filter(pk=failed.pk).update(status=NotificationStatus.FAILED)

    text = attention_text(console)

    assert "1 task waiting for a person (escalated)." in text
    assert "1 task blocked." in text
    assert "task stuck" in text
    assert "1 notification failed to send." in text
    assert "?status__exact=blocked" in text
    assert blocked.title  # listed by count, linked to the filtered list


def test_the_sandbox_turned_off_is_an_error(console, settings):
    settings.CODEX_SANDBOX = "none"

    assert "UNJAILED" in attention_text(console)
    assert "CODEX_SANDBOX=none" in attention_text(console)


def test_other_code_adds_items_and_a_failing_provider_does_not_break_the_index(
    console, monkeypatch
):
    monkeypatch.setattr(attention, "_providers", list(attention._providers))

    @attention.attention_provider
    def disk_space():
        return [attention.AttentionItem("Disk almost full", attention.ERROR)]

    @attention.attention_provider
    def broken_check():
        raise RuntimeError("boom")

    text = attention_text(console)

    assert "Disk almost full" in text
    assert "Could not check broken check" in text


def test_the_repository_form_says_how_to_register_a_local_forge_repository(console):
    html = console.get(reverse("admin:repositories_repository_add")).content.decode()

    assert "file:///absolute/path/name.git" in html
    assert "bare repository" in html
