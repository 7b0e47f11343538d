"""Spec 004's tool events (mcp_events), written to the one event log."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from codex.events.models import Event, EventKind
from codex.fleet.models import AgentInstance
from codex.fleet.tool_events import (
    RECENT_STATUS_UPDATES,
    recent_tool_events,
    record_tool_event,
    tool_events_for,
)
from tests.factories import make_task
from tests.fleet.factories import make_instance

pytestmark = pytest.mark.django_db


def test_a_tool_call_is_an_event_with_the_specs_columns():
    task = make_task()
    instance = make_instance(task=task)
    event = record_tool_event(
        instance,
        "send_feedback",
        False,
        error="push rejected",
        metadata={"files": 2},
        git_commit="abc123",
        status_change="waiting_review",
        status_updating=True,
    )
    event = Event.objects.get(pk=event.pk)
    assert (event.kind, event.subject, event.task) == (
        EventKind.TOOL,
        "instance:work-123-a1",
        task,
    )
    assert event.actor == "agent:work-123-a1"
    assert event.reason == "push rejected"
    assert event.data == {
        "instance": instance.pk,
        "repository": instance.repository_id,
        "instance_type": "coding",
        "tool_name": "send_feedback",
        "success": False,
        "error_message": "push rejected",
        "metadata": {"files": 2},
        "git_commit_hash": "abc123",
        "status_change": "waiting_review",
        "is_status_updating": True,
    }


def test_a_tool_call_stamps_last_activity_without_a_version_bump():
    instance = make_instance()
    version = instance.version
    event = record_tool_event(instance, "create_pr", True)
    stored = AgentInstance.objects.get(pk=instance.pk)
    assert stored.last_activity == event.created_at
    assert stored.version == version


def test_an_unknown_status_change_is_refused():
    with pytest.raises(ValueError, match="not an instance status"):
        record_tool_event(make_instance(), "create_pr", True, status_change="running")
    assert not Event.objects.filter(kind=EventKind.TOOL).exists()


def test_an_instances_tool_events_in_order_and_only_its_own():
    instance = make_instance()
    twin = make_instance()  # work-123-a1 of another repository
    assert twin.instance_id == instance.instance_id
    first = record_tool_event(instance, "request_review", True)
    record_tool_event(twin, "create_pr", True)
    second = record_tool_event(instance, "send_feedback", True)
    assert list(tool_events_for(instance)) == [first, second]
    assert list(instance.tool_events()) == [first, second]


def backdate(event, age):
    # The log is append-only for code; a test rewrites history at the SQL level.
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {Event._meta.db_table} SET created_at = %s WHERE id = %s",
            [timezone.now() - age, event.pk],
        )


def test_recent_status_updates_within_one_day_newest_first():
    instance = make_instance()
    old = record_tool_event(instance, "create_pr", True, status_updating=True)
    backdate(old, timedelta(days=1, minutes=1))
    quiet = record_tool_event(instance, "read_file", True)
    a = record_tool_event(instance, "request_review", True, status_updating=True)
    b = record_tool_event(instance, "create_pr", True, status_updating=True)
    recent = recent_tool_events(within=RECENT_STATUS_UPDATES, status_updating_only=True)
    assert list(recent) == [b, a]
    assert quiet in recent_tool_events()


def test_the_audit_trail_looks_back_one_week():
    instance = make_instance()
    week_old = record_tool_event(instance, "create_pr", True)
    backdate(week_old, timedelta(weeks=1, minutes=1))
    day_old = record_tool_event(instance, "create_pr", True)
    backdate(day_old, timedelta(days=6))
    assert list(recent_tool_events()) == [day_old]
