"""Issue 4: pause and cancel asked for while a worker is in a step take effect at
the step boundary; a cancelled task gives back its claim, instances and runs."""

from __future__ import annotations

import pytest

from codex.claims.models import IssueClaim
from codex.fleet.models import AgentRun
from codex.tasks.jobs import advance_task, clean_up_task
from tests.factories import make_task, put_in_state
from tests.fleet.factories import make_instance
from tests.jobs import queued_calls

pytestmark = pytest.mark.django_db


class PausingRunner:
    """While the worker is in the step, a person asks to pause or cancel."""

    action = "pause"

    def run(self, task):
        from tests.phase_runner import default_result

        other = type(task).objects.get(pk=task.pk)
        assert other.request_control(self.action, by="user:bob")[1] is True
        return default_result(task)


@pytest.mark.parametrize("action", ["pause", "cancel"])
def test_a_request_made_during_a_step_applies_when_the_step_ends(settings, action):
    settings.CODEX_PHASE_RUNNER = (
        "tests.pipeline.test_control_at_step_boundaries.PausingRunner"
    )
    PausingRunner.action = action
    task = make_task()
    result = advance_task(task.task_id)
    task.refresh_from_db()
    # The step's own work was recorded first, then the request applied.
    assert task.artifacts.filter(name="spec.md").exists()
    assert task.phase == "planning"
    expected = {"pause": "paused", "cancel": "cancelled"}[action]
    assert result == f"{expected}/planning"
    assert task.status == expected
    assert task.lease_holder is None
    request = task.control_requests.get()
    assert request.outcome == "applied"
    assert task.events.filter(target=expected, actor="user:bob").exists()


def test_a_request_waiting_between_steps_is_applied_instead_of_a_step(
    scripted_runner,
):
    task = put_in_state(make_task(), status="in_progress")
    task.acquire_lease("worker:other")
    task.request_control("pause", by="user:bob")
    task.release_lease()
    assert advance_task(task.task_id) == "paused/intake"
    assert scripted_runner.calls == []


def test_a_request_that_no_longer_applies_is_closed_with_the_reason(
    settings,
):
    """The step ended in a state that cannot pause (escalated): the request is
    closed, saying why, instead of lingering."""
    from codex.tasks.runners import PhaseResult

    class EscalatingRunner(PausingRunner):
        def run(self, task):
            super().run(task)
            return PhaseResult.escalate("needs a person")

    settings.CODEX_PHASE_RUNNER = (
        "tests.pipeline.test_control_at_step_boundaries.EscalatingRunner"
    )
    globals()["EscalatingRunner"] = EscalatingRunner
    PausingRunner.action = "pause"
    task = make_task()
    assert advance_task(task.task_id) == "escalated/intake"
    request = task.control_requests.get()
    assert request.applied_at is not None
    assert request.outcome == "not applied: the task was escalated"


def test_cancel_cleans_up_claim_instances_and_runs():
    task = make_task(issue_number=7)
    put_in_state(task, status="in_progress")
    claim = IssueClaim.objects.claim(task.repository, 7, "session-1")
    instance = make_instance(task=task, repository=task.repository, issue_number=7)
    run = AgentRun.objects.begin(by="worker:x", task=task)
    task.perform("cancel", by="user:bob")
    # Its job row is written with the cancellation (ORM broker's outbox).
    assert ("codex.tasks.jobs.clean_up_task", task.task_id) in queued_calls()
    done = clean_up_task(task.task_id)
    assert done == {"claims": 1, "instances": 1, "runs": 1}
    claim.refresh_from_db()
    instance.refresh_from_db()
    run.refresh_from_db()
    assert claim.state == "released"
    assert instance.status == "terminated"
    assert run.status == "failed"
    assert clean_up_task(task.task_id) == {"claims": 0, "instances": 0, "runs": 0}


def test_cleanup_leaves_a_task_that_is_not_cancelled_alone():
    task = put_in_state(make_task(), status="in_progress")
    assert clean_up_task(task.task_id) == {}


def test_every_step_is_recorded_as_an_agent_run(scripted_runner):
    task = make_task()
    for _ in range(8):
        advance_task(task.task_id)
    runs = AgentRun.objects.filter(task=task).order_by("started_at", "id")
    assert [run.session_id.split(":")[1] for run in runs] == [
        "intake",
        "planning",
        "implementation",
        "verification",
        "review",
        "release",
    ]
    assert {run.status for run in runs} == {"succeeded"}


@pytest.mark.parametrize(
    ("status", "claim_state", "stopped"),
    [("completed", "released", False), ("failed", "failed", True)],
)
def test_the_end_of_a_task_settles_its_issue_claim(status, claim_state, stopped):
    """Spec 000: a completed task closes its issue's claim, a failed one counts
    a failure against it; agent work of a failed task is stopped."""
    task = make_task(issue_number=9)
    claim = IssueClaim.objects.claim(task.repository, 9, "session-1")
    run = AgentRun.objects.begin(by="worker:x", task=task)
    put_in_state(task, status=status)
    clean_up_task(task.task_id)
    claim.refresh_from_db()
    run.refresh_from_db()
    assert claim.state == claim_state
    if status == "completed":
        assert claim.issue_closed and claim.successful_closes == 1
    else:
        assert claim.failure_count == 1
        assert "the task failed" in claim.failure_reasons[-1]
    assert (run.status == "failed") is stopped


def test_completing_enqueues_the_settlement(scripted_runner):
    task = make_task()
    for _ in range(8):
        advance_task(task.task_id)
    task.refresh_from_db()
    assert task.status == "completed"
    assert ("codex.tasks.jobs.clean_up_task", task.task_id) in queued_calls()
