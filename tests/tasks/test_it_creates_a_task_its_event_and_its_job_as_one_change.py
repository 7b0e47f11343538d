"""A new task, its creation event and its first step's job row are one change
(VersionedLeasedModel.save_with_rows, codex.core.store.statements): on PostgreSQL one
statement, atomic by itself, so outside a transaction no BEGIN/COMMIT either;
a taken task id is tried again and leaves nothing of the failed attempt."""

from __future__ import annotations

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django_q.models import OrmQ

from codex.events.models import Event, EventKind
from codex.tasks.models import Task
from codex.tasks.models import queryset as queryset_module
from tests.factories import make_repository, make_task
from tests.jobs import queued_jobs

pytestmark = pytest.mark.django_db(transaction=True)

ADVANCE_JOB = "codex.tasks.jobs.advance_task"


def create(**fields) -> tuple[Task, bool]:
    return Task.objects.create_from_request(
        repository=fields.pop("repository", None) or make_repository(),
        title="Add a wish list",
        **fields,
    )


def test_it_writes_all_three_rows():
    OrmQ.objects.all().delete()
    task, created = create(actor="api:alice")
    assert created and task.pk is not None and not task._state.adding
    event = Event.objects.get(task=task)
    assert (event.kind, event.target, event.actor) == (
        EventKind.CREATED,
        "pending",
        "api:alice",
    )
    assert queued_jobs() == [(ADVANCE_JOB, (task.task_id,))]
    # The object is the row: it saves like one read from the database.
    task.refresh_from_db()
    assert task.version == 1 and task.status == "pending"


def test_outside_a_transaction_one_statement_on_postgresql_one_transaction_else():
    repository = make_repository()
    with CaptureQueriesContext(connection) as queries:
        create(repository=repository)
    sent = [q["sql"].split()[0].upper() for q in queries.captured_queries]
    if connection.vendor == "postgresql":
        assert sent == ["WITH"]
    else:
        assert sent == ["BEGIN", "INSERT", "INSERT", "INSERT", "COMMIT"]


def test_a_taken_task_id_is_tried_again_and_leaves_nothing(monkeypatch):
    taken = make_task().task_id
    OrmQ.objects.all().delete()
    ids = iter([taken, "FEAT-20260101-fresh1"])
    monkeypatch.setattr(queryset_module, "new_task_id", lambda: next(ids))
    task, created = create()
    assert created and task.task_id == "FEAT-20260101-fresh1"
    assert Task.objects.count() == 2
    # One creation event and one job per task: the failed attempt left none.
    assert Event.objects.filter(kind=EventKind.CREATED).count() == 2
    assert queued_jobs() == [(ADVANCE_JOB, (task.task_id,))]


def test_inside_a_callers_transaction_a_retry_keeps_that_transaction(monkeypatch):
    taken = make_task().task_id
    ids = iter([taken, "FEAT-20260101-fresh2"])
    monkeypatch.setattr(queryset_module, "new_task_id", lambda: next(ids))
    with transaction.atomic():
        task, _ = create()
        assert Task.objects.filter(task_id=task.task_id).exists()
    assert Task.objects.filter(task_id="FEAT-20260101-fresh2").exists()


def test_the_same_idempotency_key_returns_the_first_task():
    repository = make_repository()
    first, created = create(repository=repository, idempotency_key="k-1")
    again, created_again = create(repository=repository, idempotency_key="k-1")
    assert created and not created_again and again.pk == first.pk
    assert Task.objects.count() == 1
