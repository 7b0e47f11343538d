"""Task.perform enqueues the next step in the transition's own transaction when
the broker is the ORM broker on the same database (a transactional outbox): the
job row exists if and only if the transition committed. With Redis, or when jobs
run inline, the enqueue still waits for the commit."""

from __future__ import annotations

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django_q.conf import Conf
from django_q.models import OrmQ

from codex.core.store.refusals import VersionConflict
from codex.tasks.models import Task
from tests.factories import make_task, put_in_state
from tests.jobs import queued_jobs

pytestmark = pytest.mark.django_db

ADVANCE_JOB = "codex.tasks.jobs.advance_task"


def paused() -> Task:
    return put_in_state(make_task(), status="paused", phase="planning")


def test_the_job_row_is_written_inside_the_transition_transaction(
    django_capture_on_commit_callbacks,
):
    task = paused()
    OrmQ.objects.all().delete()
    with (
        django_capture_on_commit_callbacks() as callbacks,
        CaptureQueriesContext(connection) as queries,
    ):
        task.perform("resume", by="user:alice")
    assert callbacks == []
    assert queued_jobs() == [(ADVANCE_JOB, (task.task_id,))]
    sent = [q["sql"].lstrip().split()[0].upper() for q in queries]
    # Inside the test's transaction: no savepoint of its own, and the job row
    # goes with the UPDATE (on PostgreSQL in its very statement).
    assert "SAVEPOINT" not in sent
    if connection.vendor == "postgresql":
        assert sent == ["WITH"]
    assert any("django_q_ormq" in q["sql"] for q in queries.captured_queries)


def test_a_refused_transition_leaves_no_job():
    task = paused()
    stale = Task.objects.get(pk=task.pk)
    task.perform("cancel", by="user:alice")
    OrmQ.objects.all().delete()
    with pytest.raises(VersionConflict):
        stale.perform("resume", by="user:bob")
    assert queued_jobs() == []


def test_a_rolled_back_transition_leaves_no_job():
    task = paused()
    OrmQ.objects.all().delete()
    with pytest.raises(RuntimeError), transaction.atomic():
        task.perform("resume", by="user:alice")
        assert queued_jobs() == [(ADVANCE_JOB, (task.task_id,))]  # not yet committed
        raise RuntimeError("the caller's transaction fails later")
    assert queued_jobs() == []
    assert Task.objects.get(pk=task.pk).status == "paused"


def test_a_pause_enqueues_nothing():
    task = put_in_state(make_task(), status="in_progress", phase="planning")
    OrmQ.objects.all().delete()
    task.perform("pause", by="user:alice")
    assert queued_jobs() == []


def test_with_another_broker_the_enqueue_waits_for_the_commit(
    monkeypatch, django_capture_on_commit_callbacks
):
    monkeypatch.setattr(Conf, "ORM", None)  # e.g. Redis
    sent = []
    monkeypatch.setattr(
        "django_q.tasks.async_task", lambda *a, **k: sent.append((a, k))
    )
    task = paused()
    with django_capture_on_commit_callbacks() as callbacks:
        task.perform("resume", by="user:alice")
        assert sent == []
    assert len(callbacks) == 1
    callbacks[0]()
    assert sent == [((ADVANCE_JOB, task.task_id), {"sync": False})]


def test_inline_jobs_wait_for_the_commit(
    settings, monkeypatch, django_capture_on_commit_callbacks
):
    settings.CODEX_RUN_JOBS_INLINE = True
    sent = []
    monkeypatch.setattr(
        "django_q.tasks.async_task", lambda *a, **k: sent.append((a, k))
    )
    task = paused()
    with django_capture_on_commit_callbacks() as callbacks:
        task.perform("resume", by="user:alice")
    assert sent == [] and len(callbacks) == 1
