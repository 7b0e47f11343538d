"""Outside a transaction, a logged transition on PostgreSQL is one statement.

The versioned UPDATE and its event INSERT are one data-modifying CTE, which the
database applies atomically by itself, so no BEGIN/COMMIT is sent around it
(two round trips of the three a pause used to cost); a resume's next step, the
ORM broker's job row, goes in the same statement. When the UPDATE cannot be
written that way, the statements still go in one transaction.
"""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django_q.models import OrmQ

from codex.core.store import statements
from codex.core.store.refusals import VersionConflict
from codex.events.models import Event, EventKind
from codex.tasks.models import Task
from tests.factories import make_task, put_in_state
from tests.jobs import queued_jobs

pytestmark = [pytest.mark.postgresql, pytest.mark.django_db(transaction=True)]


def in_progress() -> Task:
    return put_in_state(make_task(), status="in_progress", phase="planning")


def sent(queries) -> list[str]:
    return [q["sql"].lstrip().split()[0].upper() for q in queries]


def targets(task: Task) -> list[str]:
    events = Event.objects.filter(task=task, kind=EventKind.TRANSITION)
    return list(events.order_by("id").values_list("target", flat=True))


def test_a_pause_sends_one_statement_and_no_begin_or_commit():
    task = in_progress()
    assert not connection.in_atomic_block
    with CaptureQueriesContext(connection) as queries:
        task.perform("pause", by="user:alice")
    assert sent(queries) == ["WITH"]
    assert targets(task) == ["paused"]
    assert Task.objects.get(pk=task.pk).status == "paused"


def test_a_resume_and_its_next_step_are_one_statement_too():
    task = in_progress()
    task.perform("pause", by="user:alice")
    OrmQ.objects.all().delete()
    with CaptureQueriesContext(connection) as queries:
        task.perform("resume", by="user:alice")
    # The UPDATE, its event and the ORM broker's job row in one statement.
    assert sent(queries) == ["WITH"]
    assert "django_q_ormq" in queries.captured_queries[0]["sql"]
    assert targets(task) == ["paused", "in_progress"]
    assert queued_jobs() == [("codex.tasks.jobs.advance_task", (task.task_id,))]


def no_direct_update(*args, **kwargs):
    return None  # as when a value needs the ORM's compiler (an expression)


@pytest.fixture(params=["one statement", "two-statement fallback"])
def write_path(request, monkeypatch) -> str:
    if request.param != "one statement":
        monkeypatch.setattr(statements, "versioned_update_sql", no_direct_update)
    return request.param


def test_a_refused_write_leaves_no_event_no_job_and_no_transaction(write_path):
    task = in_progress()
    task.perform("pause", by="user:alice")
    stale = Task.objects.get(pk=task.pk)
    task.perform("cancel", by="user:alice")
    OrmQ.objects.all().delete()
    with pytest.raises(VersionConflict):
        stale.perform("resume", by="user:bob")  # would write an event and a job
    assert targets(task) == ["paused", "cancelled"]
    assert queued_jobs() == []
    assert Task.objects.get(pk=task.pk).status == "cancelled"
    assert not connection.in_atomic_block


def test_the_two_statement_fallback_opens_its_own_transaction(monkeypatch):
    monkeypatch.setattr(statements, "versioned_update_sql", no_direct_update)
    task = in_progress()
    with CaptureQueriesContext(connection) as queries:
        task.perform("pause", by="user:alice")
    assert sent(queries) == ["BEGIN", "UPDATE", "INSERT", "COMMIT"]
    assert targets(task) == ["paused"]


def test_the_fallback_writes_the_job_in_the_same_transaction(monkeypatch):
    monkeypatch.setattr(statements, "versioned_update_sql", no_direct_update)
    task = in_progress()
    task.perform("pause", by="user:alice")
    OrmQ.objects.all().delete()
    with CaptureQueriesContext(connection) as queries:
        task.perform("resume", by="user:alice")
    assert sent(queries) == ["BEGIN", "UPDATE", "INSERT", "INSERT", "COMMIT"]
    assert queued_jobs() == [("codex.tasks.jobs.advance_task", (task.task_id,))]


def test_a_failing_event_insert_leaves_the_update_undone(monkeypatch):
    monkeypatch.setattr(statements, "versioned_update_sql", no_direct_update)
    task = in_progress()

    def refuse(self, objs, *args, **kwargs):
        raise RuntimeError("the event table is unavailable")

    monkeypatch.setattr(type(Event._base_manager), "bulk_create", refuse)
    with pytest.raises(RuntimeError):
        task.perform("pause", by="user:alice")
    assert Task.objects.get(pk=task.pk).status == "in_progress"
