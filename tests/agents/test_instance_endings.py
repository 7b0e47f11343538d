"""What a step's PhaseResult means for its agent instance (agents.instances),
without a model: failed ends it, blocked and escalated park it, a review's
approval counts the coding instance's pull request as created."""

from __future__ import annotations

import pytest

from agents.instances import begin_phase_instance, end_phase_instance
from codex.fleet.models import AgentRun, InstanceStatus
from codex.tasks.runners import PhaseResult
from tests.factories import make_task, put_in_state

pytestmark = pytest.mark.django_db


def begin(task, phase):
    put_in_state(task, status="in_progress", phase=phase)
    return begin_phase_instance(task, worktree="/wt/x", branch="codex/x")


@pytest.fixture
def task():
    return make_task(issue_number=5)


def test_a_failed_step_terminates_its_instance(task):
    instance = begin(task, "implementation")
    end_phase_instance(instance, task, PhaseResult.failed("the repository is gone"))
    assert instance.status == InstanceStatus.TERMINATED
    event = instance.task.events.filter(data__transition="terminate").get()
    assert event.reason == "its run failed: the repository is gone"


@pytest.mark.parametrize(
    "result",
    [PhaseResult.blocked("rate limited"), PhaseResult.escalate("which API?")],
)
def test_blocked_and_escalated_steps_park_it_for_the_next_run(task, result):
    instance = begin(task, "intake")
    end_phase_instance(instance, task, result)
    assert instance.status == InstanceStatus.STARTED
    assert begin(task, "intake") == instance  # reused


def test_an_approving_review_marks_the_pull_request_created(task):
    put_in_state(task, pr_url="https://github.com/o/r/pull/31")
    coding = begin(task, "implementation")
    end_phase_instance(coding, task, PhaseResult())
    assert coding.status == InstanceStatus.STARTED  # waits for its review

    run = AgentRun.objects.begin(by="worker:test", task=task)
    reviewer = begin(task, "review")
    run.refresh_from_db()
    assert run.instance == reviewer and reviewer.parent == coding
    coding.refresh_from_db()
    assert coding.status == InstanceStatus.WAITING_REVIEW

    approve = PhaseResult(review={"assessment": "approve", "comments": []})
    end_phase_instance(reviewer, task, approve)
    coding.refresh_from_db()
    assert reviewer.status == InstanceStatus.TERMINATED
    assert coding.status == InstanceStatus.PR_CREATED
    assert (coding.pr_number, coding.pr_url) == (31, task.pr_url)


def test_a_review_asking_for_changes_leaves_the_coding_instance_waiting(task):
    coding = begin(task, "implementation")
    reviewer = begin(task, "review")
    changes = PhaseResult(review={"assessment": "request_changes", "comments": []})
    end_phase_instance(reviewer, task, changes)
    coding.refresh_from_db()
    assert coding.status == InstanceStatus.WAITING_REVIEW
    # The next review is the second iteration.
    second = begin(task, "review")
    assert second.parent_relationships.get().review_iteration == 2
