"""The statements every job or every change of a task sends beside its
lookups (the task's spend, the progress comment's schedule, a worker's claim
of the job it starts, the task's lease) compile no queryset after the first:
each is compiled once per process or sent as written. Their results are
checked by their own tests; this one fails when one goes back to a queryset."""

from __future__ import annotations

import pytest
from django.db import transaction
from django.db.models.sql import compiler as sql
from django_q.models import OrmQ

from codex.core.brokers import ClaimingORM
from codex.core.queue import job_row
from codex.fleet.models import AgentRun
from codex.tasks.models import ProgressEdit
from tests.factories import make_task

COMPILERS = (
    sql.SQLCompiler,
    sql.SQLInsertCompiler,
    sql.SQLUpdateCompiler,
    sql.SQLDeleteCompiler,
    sql.SQLAggregateCompiler,
)


@pytest.fixture
def compiled(monkeypatch):
    seen: list = []
    for kind in COMPILERS:
        original = kind.__dict__.get("as_sql")
        if original is None:
            continue

        def counting(self, *args, _original=original, **kwargs):
            seen.append(self.query.model)
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(kind, "as_sql", counting)
    return seen


@pytest.mark.django_db
def test_a_tasks_spend_is_compiled_once(compiled):
    task, other = make_task(), make_task()
    AgentRun.spend_of_task(task.pk)
    compiled.clear()
    assert AgentRun.spend_of_task(other.pk).runs == 0
    assert compiled == []


@pytest.mark.django_db
def test_a_workers_claim_of_its_job_is_sent_as_written(compiled):
    broker = ClaimingORM()
    row = job_row("codex.tasks.jobs.advance_task", "FEAT-1")
    row.key = broker._key(broker.claim)
    row.save()
    compiled.clear()

    assert broker.start_claim(row.pk, 4242)
    assert compiled == []
    assert OrmQ.objects.get(pk=row.pk).key == f"{broker._key(broker.claim)}#4242"
    # Claimed once: a second start (another worker given the same job) fails.
    assert not broker.start_claim(row.pk, 4343)


@pytest.mark.postgresql
@pytest.mark.django_db
def test_the_progress_comments_schedule_is_sent_as_written(compiled):
    task = make_task()
    with transaction.atomic():
        ProgressEdit.request(task.pk)  # the first change makes the row
    compiled.clear()

    with transaction.atomic():
        assert ProgressEdit.request(task.pk) is None  # one is queued already
    assert ProgressEdit.take(task.task_id) == (None, "")
    ProgressEdit.edited(task.pk, "a" * 64)
    with transaction.atomic():
        assert ProgressEdit.request(task.pk) is not None
    assert compiled == []


@pytest.mark.django_db
def test_a_tasks_lease_is_taken_and_given_back_as_written(compiled):
    task = make_task()
    compiled.clear()
    task.acquire_lease("worker:a")
    task.renew_lease()
    assert task.release_lease()
    assert compiled == []
    task.refresh_from_db()
    assert (task.lease_holder, task.lease_expires_at) == (None, None)
