"""Steps are handed to django-q by id and never seen before their transaction
commits: with the ORM broker as a job row written in it, otherwise after it."""

from __future__ import annotations

import pytest
from django_q.models import OrmQ

from codex.tasks.jobs import advance_task
from codex.tasks.runners import PhaseResult
from tests.factories import make_task, put_in_state
from tests.jobs import queued_jobs
from tests.phase_runner import verification
from tests.pipeline.helpers import ADVANCE_JOB


def _run(callbacks) -> None:
    for callback in callbacks:
        callback()


@pytest.mark.django_db
def test_creating_a_task_enqueues_its_first_step_once(
    django_capture_on_commit_callbacks, enqueued
):
    OrmQ.objects.all().delete()
    with django_capture_on_commit_callbacks() as callbacks:
        task = make_task()

    # With the ORM broker the job row is part of the task's INSERT: it exists
    # if and only if the task does, and nothing waits for the commit.
    assert callbacks == []
    assert enqueued == []
    assert queued_jobs() == [(ADVANCE_JOB, (task.task_id,))]


@pytest.mark.django_db
def test_with_redis_the_first_step_is_sent_after_the_commit(
    monkeypatch, django_capture_on_commit_callbacks, enqueued
):
    from django_q.conf import Conf

    monkeypatch.setattr(Conf, "ORM", None)
    with django_capture_on_commit_callbacks() as callbacks:
        task = make_task()

    assert len(callbacks) == 1
    assert enqueued == []  # nothing is sent before the commit
    _run(callbacks)
    assert enqueued == [((ADVANCE_JOB, task.task_id), {"sync": False})]
    assert isinstance(enqueued[0][0][1], str)


@pytest.mark.django_db
def test_a_step_that_leaves_the_task_in_progress_enqueues_the_next(
    scripted_runner, django_capture_on_commit_callbacks, enqueued
):
    task = make_task()

    with django_capture_on_commit_callbacks() as callbacks:
        result = advance_task(task.task_id)

    assert result == "in_progress/planning"
    # With the ORM broker the next step's job row is written with the step's
    # final UPDATE of the task, in its transaction: nothing waits for a commit.
    assert callbacks == []
    assert queued_jobs()[-1] == (ADVANCE_JOB, (task.task_id,))
    assert len(queued_jobs()) == 2  # the first step's, and now the second's
    assert enqueued == []


@pytest.mark.django_db
def test_a_step_that_loops_back_to_implementation_enqueues_the_next(
    scripted_runner, django_capture_on_commit_callbacks, enqueued
):
    task = make_task()
    for _ in range(3):
        advance_task(task.task_id)
    scripted_runner.queue(
        "verification", PhaseResult(verification=verification(approve=False))
    )

    with django_capture_on_commit_callbacks() as callbacks:
        result = advance_task(task.task_id)

    assert result == "in_progress/implementation"
    _run(callbacks)
    assert queued_jobs()[-1] == (ADVANCE_JOB, (task.task_id,))
    assert enqueued == []


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("phase", "result", "expected"),
    [
        ("intake", PhaseResult.blocked("rate limited"), "blocked/intake"),
        ("intake", PhaseResult.escalate("security issue"), "escalated/intake"),
        ("intake", PhaseResult.failed("boom"), "failed/intake"),
        ("release", PhaseResult(merged=True), "completed/release"),
    ],
    ids=["blocked", "escalated", "failed", "completed"],
)
def test_a_step_that_stops_the_task_enqueues_no_next_step(
    scripted_runner,
    django_capture_on_commit_callbacks,
    enqueued,
    phase,
    result,
    expected,
):
    task = make_task()
    if phase == "release":
        for _ in range(5):
            advance_task(task.task_id)
        task.refresh_from_db()
        assert task.phase == "release"
    scripted_runner.queue(phase, result)

    jobs_before = queued_jobs()
    with django_capture_on_commit_callbacks() as callbacks:
        outcome = advance_task(task.task_id)

    assert outcome == expected
    _run(callbacks)
    # No next step; a task that ended is only settled (its claim, its agents),
    # by a job row written with the step's end like any other.
    ended = expected.split("/")[0] in ("failed", "completed")
    cleanup = [("codex.tasks.jobs.clean_up_task", (task.task_id,))]
    assert queued_jobs() == jobs_before + (cleanup if ended else [])
    assert enqueued == []


@pytest.mark.django_db
def test_a_skipped_step_enqueues_nothing(
    scripted_runner, django_capture_on_commit_callbacks, enqueued
):
    task = put_in_state(make_task(), status="paused")

    with django_capture_on_commit_callbacks() as callbacks:
        assert advance_task(task.task_id) == "skipped: paused"

    assert callbacks == []
    assert enqueued == []
    assert scripted_runner.calls == []


@pytest.mark.django_db
def test_resuming_a_paused_task_enqueues_its_next_step(
    django_capture_on_commit_callbacks, enqueued
):
    task = put_in_state(make_task(), status="paused")
    OrmQ.objects.all().delete()

    with django_capture_on_commit_callbacks(execute=True):
        task.perform("resume", by="user:alice")

    # With the ORM broker the job row is written with the transition itself
    # (tests/tasks/test_next_step_in_the_transaction.py), not sent after it.
    assert enqueued == []
    assert queued_jobs() == [(ADVANCE_JOB, (task.task_id,))]
