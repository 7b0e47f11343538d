"""Task.perform writes a transition in one conditional UPDATE (a momentary lease).

The UPDATE checks the version read and that the lease is free, expired or the
caller's; the event goes in the same transaction. These tests pin what that one
statement must still refuse, and what a refusal leaves behind. The same
guarantees with real concurrent threads:
tests/core/store/test_concurrency_postgresql.py.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django_fsm import TransitionNotAllowed

from codex.core.store.refusals import LeaseUnavailable, VersionConflict
from codex.events.models import Event, EventKind
from codex.tasks.models import Escalation, Task
from tests.factories import make_task, put_in_state

T0 = datetime(2025, 3, 1, 12, 0, 0, tzinfo=UTC)

pytestmark = pytest.mark.django_db


def in_progress() -> Task:
    return put_in_state(make_task(), status="in_progress", phase="planning")


def row(task: Task) -> dict:
    return Task.objects.filter(pk=task.pk).values(
        "status", "version", "lease_holder", "lease_expires_at"
    )[0]


# PostgreSQL sends the UPDATE and the event INSERT as one statement:
# WITH updated AS (UPDATE ... RETURNING 1), r0 AS (INSERT ... SELECT ... FROM
# updated RETURNING id AS written) SELECT r0.written FROM r0.
CTE = re.compile(
    r"^WITH updated AS \((UPDATE .*?) RETURNING 1\)((?:, r\d+ AS .*)+)$", re.S
)
CTE_INSERT = re.compile(r", r\d+ AS \((INSERT .*? AS written)\)", re.S)


def statements(queries, verb: str, table: str) -> list[str]:
    parts = []
    for q in queries:
        sql = q["sql"].lstrip()
        match = CTE.match(sql)
        if match:
            parts += [match.group(1), *CTE_INSERT.findall(match.group(2))]
        else:
            parts.append(sql)
    return [sql for sql in parts if sql.upper().startswith(verb) and table in sql]


def transitions(task: Task):
    return Event.objects.filter(task=task, kind=EventKind.TRANSITION)


def test_a_transition_is_one_update_of_the_task_and_one_event_insert():
    task = in_progress()
    with CaptureQueriesContext(connection) as queries:
        task.perform("pause", by="user:alice")

    updates = statements(queries, "UPDATE", "tasks_task")
    assert len(updates) == 1
    # The lease and the version are checked in that same statement.
    assert '"version" =' in updates[0].split("WHERE", 1)[1]
    assert "lease_holder" in updates[0].split("WHERE", 1)[1]
    assert len(statements(queries, "INSERT", "events_event")) == 1
    assert not [q for q in queries if q["sql"].lstrip().upper().startswith("SELECT")]


def test_a_pause_is_one_statement_in_its_transaction_on_postgresql():
    task = in_progress()
    with CaptureQueriesContext(connection) as queries:
        task.perform("pause", by="user:alice")
    # Inside the test's own transaction: no savepoint of its own (see
    # codex.core.store.versioned.one_change).
    sent = [q["sql"].lstrip().split()[0].upper() for q in queries]
    if connection.vendor == "postgresql":
        assert sent == ["WITH"]
        assert CTE.match(queries[0]["sql"])
    else:
        assert sent == ["UPDATE", "INSERT"]
    [event] = transitions(task)
    assert event.pk is not None and (event.source, event.target) == (
        "in_progress",
        "paused",
    )


def test_a_stale_copy_writes_no_event_with_its_refused_update():
    task = in_progress()
    stale = Task.objects.get(pk=task.pk)
    task.perform("pause", by="user:alice")
    with pytest.raises(VersionConflict):
        stale.perform("cancel", by="user:bob")
    assert list(transitions(task).values_list("target", flat=True)) == ["paused"]
    assert row(task)["status"] == "paused"


def test_only_changed_columns_are_written():
    task = in_progress()
    with CaptureQueriesContext(connection) as queries:
        task.perform("pause", by="user:alice")
    [update] = statements(queries, "UPDATE", "tasks_task")
    written = update.split(" WHERE ", 1)[0]
    assert '"status"' in written
    # The request never changes; rewriting it on every transition is waste.
    for column in ("title", "description", "acceptance_criteria", "task_id"):
        assert f'"{column}"' not in written


def test_the_task_leaves_with_no_lease_one_version_later():
    task = in_progress()
    before = task.version
    task.perform("pause", by="user:alice")
    assert row(task) == {
        "status": "paused",
        "version": before + 1,
        "lease_holder": None,
        "lease_expires_at": None,
    }
    assert task.held_lease is None
    [event] = transitions(task)
    assert (event.source, event.target, event.actor) == (
        "in_progress",
        "paused",
        "user:alice",
    )


def test_a_live_lease_taken_after_the_copy_was_read_refuses_the_update():
    task = in_progress()
    stale = Task.objects.get(pk=task.pk)  # reads a free lease
    task.acquire_lease("worker:a")

    with pytest.raises(LeaseUnavailable) as caught:
        stale.perform("pause", by="user:bob")

    assert caught.value.holder == "worker:a"
    assert row(task)["status"] == "in_progress"
    assert row(task)["lease_holder"] == "worker:a"
    assert not transitions(task).exists()
    # The refused copy is the row as it is now, not half-transitioned.
    assert (stale.status, stale.lease_holder) == ("in_progress", "worker:a")
    assert stale.held_lease is None


def test_the_holder_still_transitions_under_its_lease_and_keeps_it():
    task = in_progress()
    task.acquire_lease("worker:a")
    task.perform("pause", by="worker:a")
    assert row(task)["status"] == "paused"
    assert row(task)["lease_holder"] == "worker:a"
    assert task.held_lease == "worker:a"
    assert task.release_lease() is True


def test_an_expired_lease_is_taken_over_in_the_same_write_and_logged():
    with time_machine.travel(T0, tick=False) as clock:
        task = in_progress()
        task.acquire_lease("worker:dead")
        clock.shift(timedelta(seconds=61))
        stale = Task.objects.get(pk=task.pk)
        stale.perform("pause", by="user:bob")
    assert row(task)["lease_holder"] is None
    assert row(task)["status"] == "paused"
    [lease_event] = Event.objects.filter(task=task, kind=EventKind.LEASE)
    assert lease_event.data["previous_holder"] == "worker:dead"
    assert transitions(task).count() == 1


def test_a_stale_copy_is_re_read_once_and_the_transition_judged_on_the_row():
    task = in_progress()
    stale = Task.objects.get(pk=task.pk)
    task.perform("pause", by="user:alice")
    # The copy still says in_progress; on the row the task is paused.
    stale.perform("resume", by="user:bob")
    assert row(task)["status"] == "in_progress"
    assert [e.target for e in transitions(task).order_by("id")] == [
        "paused",
        "in_progress",
    ]


def test_a_stale_copy_that_cannot_tell_is_refused_as_a_conflict():
    task = in_progress()
    stale = Task.objects.get(pk=task.pk)
    task.perform("cancel", by="user:alice")
    # On the copy, pausing is allowed; only the UPDATE can tell it is stale.
    with pytest.raises(VersionConflict):
        stale.perform("pause", by="user:bob")
    assert stale.status == "cancelled"  # re-read: the caller sees why
    assert transitions(task).count() == 1
    with pytest.raises(TransitionNotAllowed):
        stale.perform("pause", by="user:bob")


def test_a_write_between_the_read_and_the_transition_is_a_conflict():
    task = in_progress()
    stale = Task.objects.get(pk=task.pk)
    task.branch = "feat/one"
    task.save()  # someone else's write: the version moves on

    with pytest.raises(VersionConflict) as caught:
        stale.perform("pause", by="user:bob")

    assert caught.value.code == "version_mismatch"
    assert row(task) == {
        "status": "in_progress",
        "version": task.version,
        "lease_holder": None,
        "lease_expires_at": None,
    }
    assert not transitions(task).exists()
    # Re-read once, so the caller (a 409, an admin message) shows the row as
    # it is now; nothing stays queued for a later save.
    assert (stale.version, stale.branch, stale.status) == (
        task.version,
        "feat/one",
        "in_progress",
    )
    assert stale.queued_with_save() == ([], [])
    stale.perform("pause", by="user:bob")  # acting again on what it now sees
    assert row(task)["status"] == "paused"


def test_refused_transitions_queue_no_events_for_a_later_save():
    task = in_progress()
    stale = Task.objects.get(pk=task.pk)
    task.acquire_lease("worker:a")
    with pytest.raises(LeaseUnavailable):
        stale.perform("pause", by="user:bob")
    task.branch = "feat/x"
    task.save()
    assert not transitions(task).exists()


def test_resolve_reads_the_escalation_once():
    task = in_progress()
    task.perform("escalate", by="worker:qa", reason="need input", questions=["?"])
    escalation = Escalation.objects.get(task=task)
    escalation.record_resolution(decision="resume", by="user:carol", resolution="ok")
    task.refresh_from_db()
    with CaptureQueriesContext(connection) as queries:
        task.perform("resolve", by="user:carol")
    escalation_reads = statements(queries, "SELECT", "tasks_escalation")
    assert len(escalation_reads) == 1
    escalation.refresh_from_db()
    assert escalation.consumed_at is not None
    assert row(task)["status"] == "in_progress"
