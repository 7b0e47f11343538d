"""Spec 002 §3.3-3.4 feedback loops, driven through advance_task, with the
reports of §5.1's storage layout: verification writes report-1 to report-3 (the
third that requests changes escalates), review report-1 and report-2."""

from __future__ import annotations

import pytest

from codex.tasks.jobs import advance_task
from codex.tasks.models import Escalation, Phase
from codex.tasks.runners import PhaseResult
from tests.factories import make_task
from tests.phase_runner import review, verification
from tests.pipeline.helpers import run_steps, transitions


def failing_verification() -> PhaseResult:
    return PhaseResult(verification=verification(approve=False))


def failing_review() -> PhaseResult:
    return PhaseResult(review=review(approve=False, blocking=1))


def advance_to(task, phase: str, max_steps: int = 10) -> None:
    for _ in range(max_steps):
        task.refresh_from_db()
        if task.phase == phase:
            return
        advance_task(task.task_id)
    raise AssertionError(f"{task} never reached {phase}")


@pytest.mark.django_db
def test_failed_verification_goes_back_to_implementation_with_feedback(
    scripted_runner,
):
    task = make_task()
    advance_to(task, Phase.VERIFICATION)
    scripted_runner.queue("verification", failing_verification())

    assert advance_task(task.task_id) == "in_progress/implementation"

    task.refresh_from_db()
    assert task.phase == "implementation"
    assert task.status == "in_progress"
    assert task.verification_cycles == 1
    assert task.current_agent == "dev"
    assert task.ci_passing is None
    assert task.current_task == 0
    [entry] = task.feedback_history["verification"]
    assert entry["cycle"] == 1
    assert entry["feedback"] == verification(approve=False)["feedback"]
    assert task.feedback_history["review"] == []
    report = task.verification_reports.get()
    assert (report.cycle, report.recommendation) == (1, "request_changes")
    assert report.tests_failed == 2
    assert report.failures == verification(approve=False)["failures"]
    assert transitions(task, "phase")[-1] == ("verification", "implementation")
    event = task.events.in_order().filter(kind="transition").last()
    assert event.data["feedback"] == entry["feedback"]


@pytest.mark.django_db
def test_the_task_completes_after_verification_passes_on_a_later_cycle(
    scripted_runner,
):
    scripted_runner.queue(
        "verification", failing_verification(), failing_verification()
    )
    task = make_task()

    run_steps(task)

    assert task.status == "completed"
    assert task.verification_cycles == 2
    assert list(task.verification_reports.values_list("cycle", "recommendation")) == [
        (1, "request_changes"),
        (2, "request_changes"),
        (3, "approve"),
    ]
    assert [e["cycle"] for e in task.feedback_history["verification"]] == [1, 2]
    phases = [phase for _, phase in scripted_runner.calls]
    assert phases == [
        "intake",
        "planning",
        *["implementation", "verification"] * 3,
        "review",
        "release",
    ]
    assert not Escalation.objects.filter(task=task).exists()


@pytest.mark.django_db
def test_the_third_failed_verification_escalates(scripted_runner):
    scripted_runner.queue("verification", *[failing_verification() for _ in range(4)])
    task = make_task()

    results = run_steps(task)

    assert results[-1] == "escalated/verification"
    assert task.status == "escalated"
    assert task.phase == "verification"
    assert task.verification_cycles == 2
    assert [r.path for r in task.verification_reports.all()] == [
        f"agent-verification/{task.task_id}/report-{n}.yml" for n in (1, 2, 3)
    ]
    assert len(task.feedback_history["verification"]) == 2
    escalation = Escalation.objects.get(task=task)
    assert escalation.reason == "verification_max_cycles"
    assert escalation.phase == "verification"
    assert "after 3 cycles (max 3)" in escalation.detail
    assert escalation.is_open
    assert task.lease_holder is None
    assert [phase for _, phase in scripted_runner.calls].count("verification") == 3


@pytest.mark.django_db
def test_the_second_failed_verification_still_loops(scripted_runner):
    scripted_runner.queue("verification", *[failing_verification() for _ in range(2)])
    task = make_task()
    advance_to(task, Phase.VERIFICATION)

    for cycle in (1, 2):
        assert advance_task(task.task_id) == "in_progress/implementation"
        task.refresh_from_db()
        assert task.verification_cycles == cycle
        advance_to(task, Phase.VERIFICATION)

    assert task.status == "in_progress"
    assert not Escalation.objects.filter(task=task).exists()


@pytest.mark.django_db
def test_failed_review_goes_back_to_implementation_with_feedback(scripted_runner):
    task = make_task()
    advance_to(task, Phase.REVIEW)
    scripted_runner.queue("review", failing_review())

    assert advance_task(task.task_id) == "in_progress/implementation"

    task.refresh_from_db()
    assert task.review_cycles == 1
    assert task.verification_cycles == 0
    [entry] = task.feedback_history["review"]
    assert entry["cycle"] == 1
    # The report's feedback, with its comments for the developer to answer.
    sent = review(approve=False, blocking=1)
    assert entry["feedback"] == {**sent["feedback"], "comments": sent["comments"]}
    report = task.review_reports.get()
    assert (report.cycle, report.assessment, report.blocking_count) == (
        1,
        "request_changes",
        1,
    )


@pytest.mark.django_db
def test_the_second_failed_review_escalates(scripted_runner):
    scripted_runner.queue("review", *[failing_review() for _ in range(3)])
    task = make_task()

    results = run_steps(task)

    assert results[-1] == "escalated/review"
    assert task.status == "escalated"
    assert task.phase == "review"
    assert task.review_cycles == 1
    assert [r.path for r in task.review_reports.all()] == [
        f"agent-review/{task.task_id}/report-{n}.yml" for n in (1, 2)
    ]
    assert len(task.feedback_history["review"]) == 1
    escalation = Escalation.objects.get(task=task)
    assert escalation.reason == "review_max_cycles"
    assert escalation.phase == "review"
    # The one return to implementation went through verification again.
    assert [phase for _, phase in scripted_runner.calls].count("verification") == 2


@pytest.mark.django_db
def test_the_first_failed_review_still_loops(scripted_runner):
    scripted_runner.queue("review", failing_review())
    task = make_task()

    run_steps(task)

    assert task.status == "completed"
    assert task.review_cycles == 1
    assert list(task.review_reports.values_list("cycle", "assessment")) == [
        (1, "request_changes"),
        (2, "approve"),
    ]


@pytest.mark.django_db
def test_an_approving_review_with_a_blocking_comment_goes_back_to_implementation(
    scripted_runner,
):
    task = make_task()
    advance_to(task, Phase.REVIEW)
    scripted_runner.queue(
        "review", PhaseResult(review=review(approve=True, blocking=1))
    )

    result = advance_task(task.task_id)

    task.refresh_from_db()
    assert result == "in_progress/implementation"
    assert task.phase == "implementation"
    assert task.review_cycles == 1


@pytest.mark.django_db
def test_an_approving_review_with_a_blocking_comment_does_not_release(
    scripted_runner,
):
    task = make_task()
    advance_to(task, Phase.REVIEW)
    scripted_runner.queue(
        "review", PhaseResult(review=review(approve=True, blocking=1))
    )

    advance_task(task.task_id)

    task.refresh_from_db()
    assert task.phase != "release"
    assert task.status != "completed"
    assert not task.pr_merged
    assert task.lease_holder is None


@pytest.mark.django_db
def test_a_verification_without_a_recommendation_stops_the_task_cleanly(
    scripted_runner,
):
    task = make_task()
    advance_to(task, Phase.VERIFICATION)
    scripted_runner.queue("verification", PhaseResult())

    result = advance_task(task.task_id)

    task.refresh_from_db()
    assert result == "escalated/verification"
    escalation = task.escalations.get()
    assert escalation.reason == "manual_review"
    assert "no usable verdict" in escalation.detail
