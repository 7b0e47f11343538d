"""One step of a task: from a phase's result to the transitions it justifies.

`apply_result` records what the phase produced (artifacts, reports, progress)
and makes the status and phase transitions (docs/domain/tasks.md#task-status,
#task-phase) that follow from it,
including the feedback loops and the escalation past their limits. It runs
inside the caller's transaction while the caller holds the lease.
"""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from codex.configuration.credentials import configured_credentials, rotate_credential
from codex.core.backoff import backoff_seconds
from codex.core.errors import Action, ClassifiedError
from codex.tasks.models import (
    Artifact,
    EscalationReason,
    Phase,
    ReviewReport,
    Status,
    Task,
    VerificationReport,
    guards,
)
from codex.tasks.models.gates import GateKind, plan_approval_needed, plan_version
from codex.tasks.runners import PhaseResult

REPORT_FIELDS = {
    "verification": (
        "pr_url",
        "tests_passed",
        "tests_failed",
        "tests_skipped",
        "tests_total",
        "failures",
        "acceptance_criteria",
        "recommendation",
        "feedback",
    ),
    "review": ("pr_url", "assessment", "comments", "security", "feedback"),
}


def apply_result(task: Task, result: PhaseResult, *, by: str) -> None:
    """Record `result` for the task's current phase and transition accordingly.

    Leaves the task unsaved; the caller saves it (releasing the lease).
    """
    progress = task.phase_progress.setdefault(task.phase, {})
    progress["agent_invocations"] = progress.get("agent_invocations", 0) + 1
    if result.outcome == "blocked":
        _block_or_escalate(task, result, by=by)
    elif result.outcome == "failed":
        task.record_error(message=result.reason, by=by, code="abort")
        task.fail(by=by, reason=result.reason)
    elif result.outcome == "escalate":
        task.escalate(
            by=by,
            reason=result.reason,
            questions=result.questions,
            code=result.escalation_code,
        )
    elif result.outcome == "error" and result.error is not None:
        _act_on_error(task, result.error, by=by)
    elif result.outcome == "await":
        task.await_approval(
            by=by,
            reason=result.reason,
            kind=result.gate_kind,
            mode=result.gate_mode,
            subject=result.gate_subject,
        )
    elif result.outcome == "done":
        APPLY_PHASE[task.phase](task, result, by=by)
    else:
        raise ValueError(f"unknown phase outcome {result.outcome!r}")


def retry_delay(attempt: int) -> timedelta:
    """Exponential backoff with jitter, capped: base × 2^attempt, then a random
    share between half and all of it, so that tasks failing together do not
    come back together (no retry storm; docs/domain/tasks.md#retries)."""
    return timedelta(
        seconds=backoff_seconds(
            attempt,
            base=settings.CODEX_RETRY_BACKOFF_BASE_SECONDS,
            cap=settings.CODEX_RETRY_BACKOFF_MAX_SECONDS,
        )
    )


def _count_retry(task: Task) -> None:
    progress = task.phase_progress.setdefault(task.phase, {})
    progress["retries"] = progress.get("retries", 0) + 1


# The credentials a source authenticates with, where they are another
# source's: git pushes to GitHub with the GitHub token.
CREDENTIAL_SOURCE = {"git": "github"}


def _rotate(task: Task, source: str) -> str | None:
    """Move to the next credential of `source`; why not, when it cannot: only
    one is configured, or every one was rejected during this phase already (a
    loop over revoked tokens would only spend retries)."""
    # Imported here: the client pulls in PyGithub (~70 ms of CPU), which only a
    # rotation needs, not every process that imports the pipeline.
    from integrations.github.client import app_configured

    progress = task.phase_progress.setdefault(task.phase, {})
    rotations = progress.get("rotations", {})
    if source == "github" and app_configured():
        # The client forgot the refused installation token; the next call
        # mints a new one. Worth one retry, not more.
        if rotations.get(source):
            return "a new GitHub App installation token was refused too"
        progress["rotations"] = {**rotations, source: 1}
        return None
    if rotations.get(source, 0) + 1 >= len(configured_credentials(source)):
        if rotations.get(source):
            return f"every configured {source} credential was rejected"
        return f"no other {source} credential to rotate to"
    if not rotate_credential(source):
        return f"no other {source} credential to rotate to"
    progress["rotations"] = {**rotations, source: rotations.get(source, 0) + 1}
    return None


def _act_on_error(task: Task, error: ClassifiedError, *, by: str) -> None:
    """The recovery actions of docs/domain/concurrency.md#error-classification,
    applied to the task."""
    reason = f"{error.source} {error.code}: {error.message}"
    if error.action == Action.WAIT_RETRY:
        retry_after = (
            timedelta(seconds=error.retry_after)
            if error.retry_after
            else retry_delay(task.retry_count)
        )
        _block_or_escalate(
            task, PhaseResult.blocked(reason, retry_after), by=by, code=error.action
        )
    elif error.action in (Action.ROTATE_TOKEN, Action.PULL_RETRY):
        source = CREDENTIAL_SOURCE.get(error.source, error.source)
        stuck = _rotate(task, source) if error.action == Action.ROTATE_TOKEN else None
        if stuck is not None:
            task.record_error(
                message=reason,
                by=by,
                code=error.action,
                resolution=f"escalated: {stuck}",
            )
            task.escalate(
                by=by, code=EscalationReason.MANUAL_REVIEW, reason=f"{reason}; {stuck}"
            )
            return
        resolution = (
            "retrying with the next credential"
            if error.action == Action.ROTATE_TOKEN
            else "retrying after pulling the latest changes"
        )
        if guards.retries_remain(task):
            task.retry_count += 1
            _count_retry(task)
            task.record_error(
                message=reason, by=by, code=error.action, resolution=resolution
            )
        else:
            _escalate_retry_limit(task, reason, by=by)
    elif error.action == Action.MANUAL_REVIEW:
        task.record_error(
            message=reason, by=by, code=error.action, resolution="escalated"
        )
        task.escalate(by=by, code=EscalationReason.MANUAL_REVIEW, reason=reason)
    else:
        task.record_error(message=reason, by=by, code=error.action, resolution="failed")
        task.fail(by=by, reason=reason)


def _escalate_retry_limit(task: Task, reason: str, *, by: str) -> None:
    task.record_error(message=reason, by=by, code="retry_limit", resolution="escalated")
    task.escalate(
        by=by,
        code=EscalationReason.RETRY_LIMIT,
        reason=f"retry limit reached after {task.retry_count} attempts: {reason}",
    )


def _block_or_escalate(
    task: Task, result: PhaseResult, *, by: str, code: str = "wait_retry"
) -> None:
    if guards.retries_remain(task):
        until = timezone.now() + result.retry_after if result.retry_after else None
        # A wait (retry-after, backoff) is a timeout's 124; a failure with no
        # time to wait for is a partial transfer's 23 (both transient).
        exit_code = guards.EXIT_TIMEOUT if until else guards.EXIT_PARTIAL
        task.record_error(
            message=result.reason,
            by=by,
            exit_code=exit_code,
            code=code,
            resolution=f"blocked until {until:%Y-%m-%d %H:%M:%S} UTC"
            if until
            else "blocked until a person unblocks it",
        )
        _count_retry(task)
        task.block(
            by=by,
            reason=result.reason,
            retry_after=result.retry_after,
            exit_code=exit_code,
        )
    else:
        _escalate_retry_limit(task, result.reason, by=by)


def _store_artifacts(task: Task, result: PhaseResult) -> list[str]:
    paths = Artifact.store_all(task, result.artifacts)
    if paths:
        task.phase_progress[task.phase]["output_paths"] = paths
    return paths


def _intake(task: Task, result: PhaseResult, *, by: str) -> None:
    _store_artifacts(task, result)
    task.needs_clarification = result.needs_clarification
    if result.needs_clarification:
        task.escalate(
            by=by,
            code=EscalationReason.NEEDS_CLARIFICATION,
            reason=result.reason or "the request needs clarification",
            questions=result.questions,
        )
    else:
        task.begin_planning(by=by)


def _planning(task: Task, result: PhaseResult, *, by: str) -> None:
    _store_artifacts(task, result)
    if result.total_tasks is not None:
        task.total_tasks = result.total_tasks
    if result.children:
        # Too big for one pull request: the task's next step fans it out to
        # these children and it waits for them in planning
        # (docs/children.md).
        task.phase_progress[Phase.PLANNING]["split"] = list(result.children)
        return
    if plan_approval_needed(task) and guards.has_tasks(task):
        # A person reads spec.md, plan.md and tasks.md first (docs/gates.md):
        # begin_implementation happens with their approval.
        task.await_approval(
            by=by,
            reason="the spec, plan and tasks wait for a person's approval",
            kind=GateKind.PLAN,
            subject=plan_version(task),
        )
        return
    task.begin_implementation(by=by)


def _implementation(task: Task, result: PhaseResult, *, by: str) -> None:
    # The developer's answers to the last feedback (feedback-responses.md).
    _store_artifacts(task, result)
    if result.current_task is not None:
        task.current_task = min(result.current_task, task.total_tasks)
    for sha in result.commits:
        if sha not in task.commits:
            task.commits = [*task.commits, sha]
    task.branch = result.branch or task.branch
    task.pr_url = result.pr_url or task.pr_url
    if result.ci_passing is not None:
        task.ci_passing = result.ci_passing
    progress = task.phase_progress[Phase.IMPLEMENTATION]
    progress.update(current_task=task.current_task, total_tasks=task.total_tasks)
    if (
        guards.all_tasks_done(task)
        and guards.pull_request_exists(task)
        and guards.ci_is_passing(task)
    ):
        task.begin_verification(by=by)
    # Otherwise the phase goes on: the next step continues with the next task.


def _report(model, task: Task, cycle: int, fields: dict, loop: str):
    values = {name: fields[name] for name in REPORT_FIELDS[loop] if name in fields}
    values.setdefault("pr_url", task.pr_url)
    if loop == "review":
        _keep_human_reviews(model, task, cycle, values)
    report, _ = model.objects.update_or_create(task=task, cycle=cycle, defaults=values)
    return report


def _keep_human_reviews(model, task: Task, cycle: int, values: dict) -> None:
    """A person's "changes requested" on the pull request (recorded from the
    webhook into this cycle's report) stays in it next to the agent's verdict:
    its blocking comment keeps the task out of release."""
    existing = model.objects.filter(task=task, cycle=cycle).first()
    if existing is None:
        return
    human = [c for c in existing.comments if c.get("category") == "human_review"]
    if not human:
        return
    values["comments"] = [*values.get("comments", []), *human]
    merged = model(comments=values["comments"], feedback=values.get("feedback"))
    merged.tally_comments()
    values["feedback"] = {
        **merged.feedback,
        "human_reviews": existing.feedback.get("human_reviews", []),
    }


def _verification(task: Task, result: PhaseResult, *, by: str) -> None:
    report = _report(
        VerificationReport,
        task,
        task.verification_cycles + 1,
        result.verification or {},
        "verification",
    )
    task.phase_progress[Phase.VERIFICATION]["output_paths"] = [report.path]
    if guards.verification_approved(task):
        task.begin_review(by=by)
    elif not guards.verification_requested_changes(task):
        _escalate_unreadable_report(task, report, by=by)
    elif guards.verification_cycles_remain(task):
        task.return_from_verification(by=by, feedback=report.feedback)
    else:
        task.escalate(
            by=by,
            code=EscalationReason.VERIFICATION_LIMIT,
            reason=f"verification still requests changes after "
            f"{report.cycle} cycles (max {task.verification_max_cycles})",
        )


def _review(task: Task, result: PhaseResult, *, by: str) -> None:
    report = _report(
        ReviewReport, task, task.review_cycles + 1, result.review or {}, "review"
    )
    task.phase_progress[Phase.REVIEW]["output_paths"] = [report.path]
    if guards.review_approved(task) and guards.no_blocking_comments(task):
        task.begin_release(by=by)
    elif not guards.review_requested_changes(task):
        _escalate_unreadable_report(task, report, by=by)
    elif guards.review_cycles_remain(task):
        # The developer answers every comment by its id (agents/feedback.py).
        task.return_from_review(
            by=by, feedback={**report.feedback, "comments": report.comments}
        )
    else:
        task.escalate(
            by=by,
            code=EscalationReason.REVIEW_LIMIT,
            reason=f"review still requests changes after "
            f"{report.cycle} cycles (max {task.review_max_cycles})",
        )


def _escalate_unreadable_report(task: Task, report, *, by: str) -> None:
    """A report that neither approves nor requests changes cannot move the task:
    a person decides instead of the pipeline guessing."""
    verdict = getattr(report, "recommendation", None) or getattr(
        report, "assessment", ""
    )
    task.escalate(
        by=by,
        code=EscalationReason.MANUAL_REVIEW,
        reason=f"{report.path} has no usable verdict ({verdict or 'none'}); "
        "expected approve or request_changes",
    )


def _release(task: Task, result: PhaseResult, *, by: str) -> None:
    _store_artifacts(task, result)
    task.pr_merged = task.pr_merged or result.merged
    if task.pr_merged:
        task.complete(by=by)
    else:
        _block_or_escalate(
            task,
            PhaseResult.blocked(result.reason or "pull request not merged yet"),
            by=by,
        )


APPLY_PHASE = {
    Phase.INTAKE: _intake,
    Phase.PLANNING: _planning,
    Phase.IMPLEMENTATION: _implementation,
    Phase.VERIFICATION: _verification,
    Phase.REVIEW: _review,
    Phase.RELEASE: _release,
}


def should_continue(task: Task) -> bool:
    """Whether another step should be enqueued right away."""
    return task.status == Status.IN_PROGRESS
