"""The data migration of the gates (docs/gates.md): a task that waited in the
old `awaiting_approval` status becomes `escalated`, its open gate gets an
open escalation of its kind, and the move is in the event log; backward
undoes it."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = ("tasks", "0017_gates_are_escalations")
AFTER = ("tasks", "0018_waiting_tasks_are_escalated")
OPENED = datetime(2026, 1, 19, 10, 30, tzinfo=UTC)


def migrate(target):
    """The tasks app at `target`, the other apps at their newest (their
    tables as the database has them: a repository row needs every column)."""
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    others = [
        leaf
        for leaf in executor.loader.graph.leaf_nodes()
        if leaf[0] != target[0] and leaf[0] != "tasks"
    ]
    executor.migrate([target, *others])
    executor.loader.build_graph()
    return executor.loader.project_state([target, *others]).apps


def test_waiting_tasks_become_escalated_with_their_gates_escalation():
    apps = migrate(BEFORE)
    Repository = apps.get_model("repositories", "Repository")
    Task = apps.get_model("tasks", "Task")
    Gate = apps.get_model("tasks", "Gate")
    repository = Repository.objects.create(
        url="https://github.com/acme/widgets", default_branch="main"
    )

    def task(task_id, status, phase):
        return Task.objects.create(
            task_id=task_id,
            created_by="api",
            repository=repository,
            title="t",
            status=status,
            phase=phase,
            request_fingerprint="x",
        )

    plan = task("FEAT-20260119-aaaaaa", "awaiting_approval", "planning")
    merge = task("FEAT-20260119-bbbbbb", "awaiting_approval", "release")
    running = task("FEAT-20260119-cccccc", "in_progress", "review")
    Gate.objects.create(
        task=plan, kind="plan", reason="the plan waits", subject="v1", opened_at=OPENED
    )
    Gate.objects.create(
        task=merge, kind="merge", mode="manual", reason="merge it", opened_at=OPENED
    )

    apps = migrate(AFTER)
    Task = apps.get_model("tasks", "Task")
    Escalation = apps.get_model("tasks", "Escalation")
    Event = apps.get_model("events", "Event")
    assert dict(Task.objects.values_list("task_id", "status")) == {
        plan.task_id: "escalated",
        merge.task_id: "escalated",
        running.task_id: "in_progress",
    }
    rows = {
        e.task.task_id: (e.reason, e.phase, e.detail, e.resolved_at, e.created_at)
        for e in Escalation.objects.select_related("task")
    }
    assert rows == {
        plan.task_id: ("plan_approval", "planning", "the plan waits", None, OPENED),
        merge.task_id: ("merge_approval", "release", "merge it", None, OPENED),
    }
    assert (
        apps.get_model("tasks", "Gate").objects.filter(escalation__isnull=False).count()
        == 2
    )
    assert (
        Event.objects.filter(
            kind="transition", source="awaiting_approval", target="escalated"
        ).count()
        == 2
    )

    apps = migrate(BEFORE)
    Task = apps.get_model("tasks", "Task")
    assert Task.objects.get(task_id=plan.task_id).status == "awaiting_approval"
    assert not apps.get_model("tasks", "Escalation").objects.exists()
    migrate(AFTER)
