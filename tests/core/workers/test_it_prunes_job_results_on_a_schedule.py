"""Successful jobs' results are pruned by a scheduled job, not by each job's
save (codex/core/workers/job_results.py): django-q2's own pruning read and locked
every kept result on every save."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from django_q.brokers import get_broker
from django_q.models import Failure, Schedule, Success, Task
from django_q.monitor import save_task

from codex.core.workers.job_results import prune_job_results

pytestmark = pytest.mark.django_db


def job(minutes_ago: int, *, success: bool = True) -> Task:
    stopped = timezone.now() - timedelta(minutes=minutes_ago)
    return Task.objects.create(
        id=uuid.uuid4().hex,
        name=uuid.uuid4().hex,
        func="codex.tasks.jobs.advance_task",
        args=("FEAT-20260101-abcdef",),
        kwargs={},
        started=stopped - timedelta(seconds=1),
        stopped=stopped,
        result="done",
        success=success,
    )


def test_it_keeps_the_newest_successes_and_every_failure(
    settings, django_assert_num_queries
):
    settings.CODEX_JOB_RESULTS_KEPT = 3
    successes = [job(minutes) for minutes in (50, 40, 30, 20, 10)]
    failures = [job(minutes, success=False) for minutes in (60, 5)]
    with django_assert_num_queries(1):  # one DELETE, whatever is kept
        assert prune_job_results() == 2
    assert set(Success.objects.values_list("id", flat=True)) == {
        j.id for j in successes[2:]
    }
    assert set(Failure.objects.values_list("id", flat=True)) == {j.id for j in failures}
    assert prune_job_results() == 0  # safe to run again


def test_a_jobs_save_does_not_read_the_kept_results(settings):
    assert settings.Q_CLUSTER["save_limit"] == 0
    for minutes in range(30):
        job(minutes)
    package = {
        "id": uuid.uuid4().hex,
        "name": "one-more",
        "func": "codex.tasks.jobs.advance_task",
        "args": ("FEAT-20260101-abcdef",),
        "kwargs": {},
        "started": timezone.now(),
        "stopped": timezone.now(),
        "result": "done",
        "success": True,
        # As the worker's own save: no closing of the connection (the test's
        # transaction) before it.
        "sync": True,
    }
    with CaptureQueriesContext(connection) as queries:
        save_task(package, get_broker())
    assert Success.objects.filter(name="one-more").exists()
    statements = [q["sql"].upper() for q in queries.captured_queries]
    # Neither the kept results locked nor read whole (a SELECT with no WHERE).
    locks = [sql for sql in statements if "FOR UPDATE" in sql]
    whole_reads = [
        sql for sql in statements if sql.startswith("SELECT") and "WHERE" not in sql
    ]
    assert locks == [] and whole_reads == []
    assert len(queries.captured_queries) <= 4


def test_it_runs_on_a_schedule():
    assert Schedule.objects.filter(
        func="codex.core.workers.job_results.prune_job_results"
    ).exists()
