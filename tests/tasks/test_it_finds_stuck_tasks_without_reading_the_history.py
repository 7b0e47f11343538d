"""Stuck-task recovery runs every minute and must cost the same at 1,000,000
tasks as at 10,000: its query reads the `task_stuck` index, which holds only
the tasks work is owed on (pending, in_progress, blocked), never the finished
history (docs/deployment.md#measured; bench/scale.py measures the job)."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from codex.tasks.models import Task
from codex.tasks.recovery import recoverable_task_ids
from tests.factories import make_repository

pytestmark = [pytest.mark.django_db, pytest.mark.postgresql]
HISTORY = 5_000
IN_FLIGHT = 300


def plan_nodes(plan: dict) -> list[dict]:
    return [plan, *(n for child in plan.get("Plans", []) for n in plan_nodes(child))]


def test_the_query_reads_only_the_index_of_the_work_in_flight():
    repository = make_repository()
    long_ago = timezone.now() - timedelta(days=30)
    Task.objects.bulk_create(
        Task(
            repository=repository,
            task_id=f"FEAT-20260101-{number:06d}",
            title="finished long ago" if number >= IN_FLIGHT else "in flight",
            created_by="api",
            request_fingerprint=str(number),
            phase_entered_at=long_ago if number >= IN_FLIGHT else timezone.now(),
        )
        for number in range(IN_FLIGHT + HISTORY)
    )
    with connection.cursor() as cursor:
        # The history, finished: written around the transitions on purpose.
        cursor.execute(
            f"UPDATE {Task._meta.db_table} SET status = 'completed' "
            "WHERE title = 'finished long ago'"
        )
        cursor.execute(f"ANALYZE {Task._meta.db_table}")
        sql, params = recoverable_task_ids(timezone.now()).query.sql_with_params()
        cursor.execute(f"EXPLAIN (FORMAT JSON) {sql}", params)
        plan = cursor.fetchone()[0]
    if isinstance(plan, str):
        plan = json.loads(plan)
    task_scans = [
        node
        for node in plan_nodes(plan[0]["Plan"])
        if node.get("Relation Name") == Task._meta.db_table
    ]
    assert [node.get("Index Name") for node in task_scans] == ["task_stuck"], plan
    # The index holds the tasks in flight, not the history.
    with connection.cursor() as cursor:
        cursor.execute("SELECT reltuples FROM pg_class WHERE relname = 'task_stuck'")
        assert cursor.fetchone()[0] == IN_FLIGHT
