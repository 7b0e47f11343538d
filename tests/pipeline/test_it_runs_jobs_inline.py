"""With CODEX_RUN_JOBS_INLINE, the enqueued chain runs in-process through
django-q's async_task(sync=True): creating a task is enough to finish it."""

from __future__ import annotations

import pytest
from django_q.models import Task as QueuedJob

from codex.tasks.models import Task
from tests.factories import make_task


@pytest.fixture
def inline_jobs(settings):
    settings.CODEX_RUN_JOBS_INLINE = True


@pytest.mark.django_db
def test_creating_a_task_runs_the_whole_chain_inline(
    scripted_runner, inline_jobs, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        task = make_task()

    task.refresh_from_db()
    assert task.status == "completed"
    assert task.lease_holder is None
    # one per step (created + 5 phase moves), then the settlement of the end
    assert len(callbacks) == 7
    settled = QueuedJob.objects.get(func="codex.tasks.jobs.clean_up_task")
    assert settled.success and settled.args == (task.task_id,)
    assert len(scripted_runner.calls) == 6
    jobs = QueuedJob.objects.filter(func="codex.tasks.jobs.advance_task")
    assert jobs.count() == 6
    assert all(job.success for job in jobs)
    assert all(job.args == (task.task_id,) for job in jobs)
    assert [job.result for job in jobs.order_by("started")] == [
        "in_progress/planning",
        "in_progress/implementation",
        "in_progress/verification",
        "in_progress/review",
        "in_progress/release",
        "completed/release",
    ]


@pytest.mark.django_db
def test_the_inline_chain_stops_at_a_block(
    inline_jobs, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        task = make_task()

    task = Task.objects.get(pk=task.pk)
    assert task.status == "blocked"
    assert task.blocked_reason == "no agent backend configured"
    assert len(callbacks) == 1
