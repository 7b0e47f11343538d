"""codex.core.store.versioned.one_change: a logged save inside a caller's transaction
sends no SAVEPOINT/RELEASE of its own (two round trips per save), and a
refused write (a stale version, a missing lease) still leaves that transaction
usable, because it wrote nothing."""

from __future__ import annotations

import pytest
from django.db import DataError, connection, transaction
from django.test.utils import CaptureQueriesContext

from codex.core.store.refusals import LeaseRequired, VersionConflict
from codex.core.store.versioned import one_change
from codex.events.models import Event, EventKind
from codex.fleet.models import AgentRun
from codex.tasks.models import Task
from tests.factories import make_task, put_in_state

pytestmark = pytest.mark.django_db(transaction=True)


def in_progress() -> Task:
    return put_in_state(make_task(), status="in_progress", phase="planning")


def verbs(queries) -> list[str]:
    return [q["sql"].lstrip().split()[0].upper() for q in queries]


def test_a_task_and_a_run_saved_in_one_transaction_send_no_savepoint():
    task = in_progress()
    run = AgentRun.objects.begin(by="worker:1", task=task)
    with CaptureQueriesContext(connection) as queries, transaction.atomic():
        task.perform("pause", by="user:alice")
        run.perform("succeed", by="worker:1")
    assert "SAVEPOINT" not in verbs(queries)
    assert Task.objects.get(pk=task.pk).status == "paused"
    assert AgentRun.objects.get(pk=run.pk).status == "succeeded"


def test_a_refused_write_leaves_the_callers_transaction_usable():
    task = in_progress()
    run = AgentRun.objects.begin(by="worker:1", task=task)
    stale = AgentRun.objects.get(pk=run.pk)
    with transaction.atomic():
        task.perform("pause", by="user:alice")
        run.perform("succeed", by="worker:1")
        with pytest.raises(VersionConflict):
            stale.perform("fail", by="worker:2")
        # The transaction goes on, and what was written before stays.
        assert Task.objects.get(pk=task.pk).status == "paused"
    assert AgentRun.objects.get(pk=run.pk).status == "succeeded"
    assert Task.objects.get(pk=task.pk).status == "paused"
    targets = Event.objects.filter(kind=EventKind.TRANSITION, task=task)
    assert "failed" not in set(targets.values_list("target", flat=True))


def test_a_save_without_the_lease_is_refused_before_it_writes():
    task = in_progress()
    with transaction.atomic():
        task.pause(by="test")
        with pytest.raises(LeaseRequired):
            task.save()
        assert Task.objects.get(pk=task.pk).status == "in_progress"


def test_a_failing_write_rolls_back_the_callers_whole_transaction(monkeypatch):
    task = in_progress()
    run = AgentRun.objects.begin(by="worker:1", task=task)

    def refuse(self, objs, *args, **kwargs):
        raise RuntimeError("the event table is unavailable")

    with pytest.raises(RuntimeError), transaction.atomic():
        task.perform("pause", by="user:alice")
        monkeypatch.setattr(type(Event._base_manager), "bulk_create", refuse)
        monkeypatch.setattr(
            "codex.core.store.statements.versioned_update_sql", lambda *a: None
        )
        run.perform("succeed", by="worker:1")
    assert Task.objects.get(pk=task.pk).status == "in_progress"
    assert AgentRun.objects.get(pk=run.pk).status == "running"


def test_a_refusal_after_the_write_is_an_error_like_any_other():
    task = in_progress()

    def refused_later():
        raise VersionConflict(task, 1)  # e.g. a callback's own versioned save

    with transaction.atomic():
        with pytest.raises(VersionConflict):
            one_change(lambda: task.perform("pause", by="user:alice"), refused_later)
        # Not taken for "nothing was written": the transaction must roll back.
        assert transaction.get_rollback()
    assert Task.objects.get(pk=task.pk).status == "in_progress"


def test_a_refusal_keeps_a_transaction_that_was_already_doomed_doomed():
    task = in_progress()
    stale = Task.objects.get(pk=task.pk)
    task.perform("pause", by="user:alice")
    with transaction.atomic():
        transaction.set_rollback(True)
        with pytest.raises(LeaseRequired):
            stale.pause(by="test")
            stale.save()
        assert transaction.get_rollback()


@pytest.mark.postgresql
def test_an_overlong_event_value_is_refused_not_cut_short():
    task = in_progress()
    with pytest.raises(DataError):
        task.perform("pause", by="u" * 300)  # the actor column holds 200
    assert Task.objects.get(pk=task.pk).status == "in_progress"
    assert not Event.objects.filter(actor__startswith="uuu").exists()
