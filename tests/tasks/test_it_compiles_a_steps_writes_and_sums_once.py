"""The statements every job or every change of a task sends beside its
lookups (the task's spend and documents, the latest review, the progress
comment's schedule, a worker's claim of the job it starts, the task's lease)
compile no queryset after the first: each is compiled once per process or
sent as written. Their results are checked by their own tests too; this one
fails when one goes back to a queryset."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import transaction
from django.db.models.sql import compiler as sql
from django.utils import timezone
from django_q.models import OrmQ

from codex.core.workers.brokers import ClaimingORM
from codex.core.workers.queue import job_row
from codex.fleet.models import AgentInstance, AgentRun
from codex.tasks.models import Artifact, ProgressEdit, ReviewReport
from tests.factories import make_task
from tests.fleet.factories import make_instance

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


@pytest.mark.django_db
def test_a_steps_documents_and_review_counts_are_compiled_once(compiled):
    task = make_task()
    Artifact.store_all(task, {"spec.md": "old spec"})
    Artifact.objects.filter(task=task).update(
        created_at=timezone.now() - timedelta(minutes=1)
    )
    Artifact.store_all(task, {"spec.md": "new spec", "plan.md": "the plan"})
    coding = make_instance(task=task, issue_number=5)
    planner = make_instance("planning", repository=coding.repository)
    numbers = AgentInstance.objects.all()
    for _ in range(2):  # the first compiles, the second may not
        compiled.clear()
        assert numbers._highest_agent_number(coding.repository, "coding", 5) == 1
        assert numbers._highest_agent_number(coding.repository, "coding", 6) == 0
        assert numbers._highest_agent_number(planner.repository, "planning", None) == 1
        documents = Artifact.latest_of(task.pk, ("spec.md", "plan.md", "tasks.md"))
        assert documents == {"spec.md": "new spec", "plan.md": "the plan"}
        assert Artifact.latest_of(task.pk, ("plan.md",)) == {"plan.md": "the plan"}
        assert task.latest_review_report() is None
        assert coding.current_review_iteration() == 0
    assert compiled == []
    ReviewReport.objects.create(task=task, cycle=1, pr_url="https://x/1")
    newest = ReviewReport.objects.create(task=task, cycle=2, pr_url="https://x/1")
    assert task.latest_review_report() == newest
