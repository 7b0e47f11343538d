"""The scheduled jobs that run every minute look for silent runs, silent
instances and blocked tasks whose retry time came through an index keyed by
what they compare (the staleness expression, the retry time), so a look that
finds nothing costs the same with 100 or 1,000 tasks at work: scanning every
running row and filtering it grew with the active work (bench/scheduled.py).
Each query is planned with sequential scans off: what is checked is that the
query can use its index at all, which a filter rewritten in another shape
(an OR of the two columns) loses. PostgreSQL only: the indexes are partial,
and SQLite, the embedded default, plans a statement before its parameters
are bound, so it never proves a partial index's condition."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.utils import timezone

from codex.fleet.heartbeats import parked_instances_q, stale_instances_q, stale_runs_q
from codex.fleet.models import AgentInstance, AgentRun, RunStatus
from codex.tasks.jobs import due_blocked_tasks
from codex.tasks.models import Status, Task
from tests.factories import make_repository, make_task
from tests.fleet.factories import make_instance

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(
        connection.vendor != "postgresql", reason="partial indexes: PostgreSQL"
    ),
]


WORKING = 200


@pytest.fixture(autouse=True)
def work_under_way():
    """Runs, instances and blocked tasks at work, none of them due, and the
    planner's statistics of them: the plans are those of a busy system, not
    of empty tables whatever earlier tests left in the statistics."""
    now = timezone.now()
    repository = make_repository()
    tasks = [make_task(repository=repository) for _ in range(WORKING)]
    Task._base_manager.filter(pk__in=[task.pk for task in tasks]).update(
        status=Status.BLOCKED, blocked_until=now + timedelta(hours=1)
    )
    AgentRun.objects.bulk_create(
        AgentRun(
            session_id=f"busy-{n}",
            status=RunStatus.RUNNING,
            started_at=now - timedelta(minutes=5),
            heartbeat_at=now,
        )
        for n in range(WORKING)
    )
    for n in range(WORKING):
        instance = make_instance(repository=repository, issue_number=n + 1)
        AgentInstance._base_manager.filter(pk=instance.pk).update(heartbeat_at=now)
    with connection.cursor() as cursor:
        for model in (Task, AgentRun, AgentInstance):
            cursor.execute(f"ANALYZE {model._meta.db_table}")


def plan(queryset) -> str:
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        return queryset.explain()


def searched_by(index: str, key: str, queryset) -> bool:
    """Whether the plan searches `index` on its `key` (not merely reads all
    of a partial index and filters every row)."""
    text = plan(queryset)
    return bool(re.search(rf"{index}\b.*\n\s*Index Cond: \(+{re.escape(key)}", text))


def cutoff():
    return timezone.now() - timedelta(minutes=10)


def test_silent_runs_are_found_by_run_silent():
    query = AgentRun.objects.running().filter(stale_runs_q(cutoff()))
    key = "COALESCE(heartbeat_at, started_at) <"
    assert searched_by("run_silent", key, query.values_list("pk"))


def test_silent_instances_are_found_by_instance_live_silent():
    query = (
        AgentInstance.objects.running()
        .filter(stale_instances_q(cutoff()))
        .exclude(parked_instances_q())
    )
    key = "COALESCE(heartbeat_at, last_activity) <"
    assert searched_by("instance_live_silent", key, query.values_list("pk"))


def test_blocked_tasks_due_are_found_by_task_blocked_until():
    key = "blocked_until IS NOT NULL) AND (blocked_until <="
    assert searched_by("task_blocked_until", key, due_blocked_tasks())
