"""The guards of a task's transitions (docs/domain/tasks.md#task-status,
#task-phase) as named predicates over a task.

django-fsm calls each with the task; a transition happens only when all of its
guards are true. Guards that read reports or artifacts query the database.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.conf import settings
from django.utils import timezone

if TYPE_CHECKING:
    from codex.tasks.models.task import Task


def default_verification_max_cycles() -> int:
    """A new task's verification limit until it starts (the environment's
    CODEX_VERIFICATION_MAX_CYCLES: creating a task stays one statement)."""
    return settings.CODEX_VERIFICATION_MAX_CYCLES


def default_review_max_cycles() -> int:
    """A new task's review limit until it starts (CODEX_REVIEW_MAX_CYCLES)."""
    return settings.CODEX_REVIEW_MAX_CYCLES


def configured_loop_limits() -> tuple[int, int]:
    """The feedback-loop limits a task takes when it starts: configuration
    verification.max_cycles and review.max_cycles (database, environment,
    default)."""
    from codex.configuration.config import get_config

    return get_config("verification.max_cycles"), get_config("review.max_cycles")


def empty_feedback_history() -> dict[str, list]:
    return {"verification": [], "review": []}


# -- status guards --------------------------------------------------------------


def phase_is_intake(task: Task) -> bool:
    """pending → in_progress requires phase = intake."""
    return task.phase == "intake"


def lease_available(task: Task) -> bool:
    """No one but the caller holds an unexpired lease."""
    return not task.lease_is_active or task.lease_holder == task.held_lease


# in_progress → blocked: "exit_code ∈ {23, 124}". Codex's transient failures
# carry them: 124 (a timeout, as timeout(1) exits) when the step timed out or
# must wait (a retry-after, a rate limit, CI still pending), 23 (a partial
# transfer, as rsync exits) when an outside system dropped or refused the
# work for now (docs/domain/tasks.md#retries).
EXIT_PARTIAL = 23
EXIT_TIMEOUT = 124
TRANSIENT_EXIT_CODES = frozenset({EXIT_PARTIAL, EXIT_TIMEOUT})


def exit_code_is_transient(exit_code: int | None) -> bool:
    """in_progress → blocked requires exit_code ∈ {23, 124}."""
    return exit_code in TRANSIENT_EXIT_CODES


def retries_remain(task: Task) -> bool:
    """in_progress → blocked: retries < max (configuration tasks.max_retries)."""
    from codex.configuration.config import get_config

    return task.retry_count < get_config("tasks.max_retries")


def backoff_elapsed(task: Task) -> bool:
    """blocked → in_progress: the retry backoff has elapsed."""
    return task.blocked_until is None or task.blocked_until <= timezone.now()


def escalation_resolved_for_resume(task: Task) -> bool:
    """escalated → in_progress: a resolution was provided and not yet consumed.

    Kept on the task for the `resolve` body, which django-fsm runs right after
    its guards: one query per resolve instead of two.
    """
    escalation = task.open_escalation_for_resume
    task.__dict__["_escalation_for_resume"] = escalation
    return escalation is not None


def escalation_not_stale(task: Task) -> bool:
    """escalated → in_progress: "task not stale". The resolution answers the
    task as it was when the question was asked: the escalation was raised in
    the task's current phase, during its current visit of that phase (a task
    moved meanwhile, by an operator or a recovery, needs a new question)."""
    escalation = task.__dict__.get("_escalation_for_resume")
    if escalation is None:
        escalation = task.open_escalation_for_resume
    if escalation is None:
        return False
    return (
        escalation.phase == task.phase
        and escalation.created_at >= task.phase_entered_at
    )


def phase_is_release(task: Task) -> bool:
    """in_progress → completed requires phase = release."""
    return task.phase == "release"


def pull_request_merged(task: Task) -> bool:
    """in_progress → completed requires the pull request merged."""
    return task.pr_merged


def children_work_merged(task: Task) -> bool:
    """in_progress → completed for a parent: its fan-out's analysis is stored
    with a merging strategy (the caller merged what it chose first)."""
    from codex.children.decision import MERGING_STRATEGIES
    from codex.children.models import CompletionAnalysis

    strategy = (
        CompletionAnalysis.objects.filter(fan_out__parent_id=task.pk)
        .values_list("merge_strategy", flat=True)
        .first()
    )
    return strategy in MERGING_STRATEGIES


# -- phase guards ---------------------------------------------------------------


def is_in_progress(task: Task) -> bool:
    """Phases move only while the task is being worked on."""
    return task.status == "in_progress"


def spec_exists(task: Task) -> bool:
    """intake → planning: spec.md exists."""
    return task.artifacts.filter(name="spec.md").exists()


def clarification_not_needed(task: Task) -> bool:
    """intake → planning: needs_clarification = false."""
    return not task.needs_clarification


def plan_and_tasks_exist(task: Task) -> bool:
    """planning → implementation: plan.md and tasks.md exist."""
    names = set(
        task.artifacts.filter(name__in=["plan.md", "tasks.md"]).values_list(
            "name", flat=True
        )
    )
    return names == {"plan.md", "tasks.md"}


def has_tasks(task: Task) -> bool:
    """planning → implementation: task_count > 0."""
    return task.total_tasks > 0


def all_tasks_done(task: Task) -> bool:
    """implementation → verification: current_task = total_tasks."""
    return task.total_tasks > 0 and task.current_task == task.total_tasks


def pull_request_exists(task: Task) -> bool:
    """implementation → verification: a pull request exists."""
    return bool(task.pr_url)


def ci_is_passing(task: Task) -> bool:
    """implementation → verification: CI passing."""
    return task.ci_passing is True


def _latest_verification_recommendation(task: Task) -> str | None:
    report = task.latest_verification_report()
    if report is None or report.cycle != task.verification_cycles + 1:
        return None  # no report for the current cycle yet
    return report.recommendation


def verification_approved(task: Task) -> bool:
    """verification → review: recommendation = "approve"."""
    return _latest_verification_recommendation(task) == "approve"


def verification_requested_changes(task: Task) -> bool:
    """verification → implementation: recommendation = "request_changes"."""
    return _latest_verification_recommendation(task) == "request_changes"


def verification_cycles_remain(task: Task) -> bool:
    """verification → implementation: the cycle being judged (cycle_count + 1,
    its report's number) is below max_cycles (3).

    The storage layout keeps report-1 to report-3 (report-1 and -2 for
    review), so the third report that requests changes escalates instead of
    looping back.
    """
    return task.verification_cycles + 1 < task.verification_max_cycles


def _latest_review(task: Task):
    report = task.latest_review_report()
    if report is None or report.cycle != task.review_cycles + 1:
        return None
    return report


def review_approved(task: Task) -> bool:
    """review → release: assessment = "approve"."""
    report = _latest_review(task)
    return report is not None and report.assessment == "approve"


def no_blocking_comments(task: Task) -> bool:
    """review → release: no blocking comments."""
    report = _latest_review(task)
    return report is not None and report.blocking_count == 0


def review_requested_changes(task: Task) -> bool:
    """review → implementation: assessment = "request_changes".

    A review that approves but leaves blocking comments asks for changes too:
    release requires both approval and no blocking comments.
    """
    report = _latest_review(task)
    return report is not None and (
        report.assessment == "request_changes" or report.blocking_count > 0
    )


def review_cycles_remain(task: Task) -> bool:
    """review → implementation: the cycle being judged (cycle_count + 1) is
    below max_cycles (2): report-1 loops back, report-2 escalates."""
    return task.review_cycles + 1 < task.review_max_cycles
