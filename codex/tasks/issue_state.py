"""`issue-state.json` (docs/domain/tasks.md#exports): a task as the issue
pipeline's state, one section per stage of the pipeline, each built by its
own function. A read-only view of the database; nothing is stored in this
format."""

from __future__ import annotations

import json
from typing import Any

from codex.tasks.export_values import objects as _objects
from codex.tasks.export_values import timestamp as _timestamp
from codex.tasks.models import Phase, ReviewReport, Status, Task

# The issue pipeline's agent for each phase (docs/domain/tasks.md#exports).
PHASE_TO_003_AGENT = {
    Phase.INTAKE: "triage",
    Phase.PLANNING: "analyst",
    Phase.IMPLEMENTATION: "writer",
    Phase.VERIFICATION: "build",
    Phase.REVIEW: "reviewer",
    Phase.RELEASE: "committer",
}
STATUS_TO_003 = {
    Status.PENDING: "in_progress",
    Status.IN_PROGRESS: "in_progress",
    Status.BLOCKED: "blocked",
    Status.ESCALATED: "blocked",
    Status.PAUSED: "blocked",
    Status.COMPLETED: "completed",
    Status.FAILED: "failed",
    Status.CANCELLED: "failed",
}
VERDICT_003 = {"approve": "APPROVED", "request_changes": "REJECTED"}


def issue_state(task: Task) -> dict[str, Any]:
    """The task as `issue-state.json` (docs/domain/tasks.md#exports): one
    section per stage of the issue pipeline, each built by its own function."""
    triage = _one_to_one(task, "triage")
    analysis = _one_to_one(task, "analysis")
    build = task.build_results.order_by("-cycle").first()
    review = task.latest_review_report()
    attempt = writer_attempt(task)
    writer = _writer_record(task)
    return {
        "version": "1.0",
        "issue": _issue_section(task, triage),
        "pipeline": _pipeline_section(task, attempt),
        "triage": _triage_section(triage),
        "analysis": _analysis_section(analysis),
        "writer": _writer_section(task, analysis, writer, attempt),
        "build": _build_section(build),
        "review": _review_section(task, review),
        "commit": _commit_section(task, writer),
        "communication": _communication_section(task),
        "learnings": _learnings_section(task),
    }


def writer_attempt(task: Task) -> int:
    """The writer's attempt (docs/domain/tasks.md#exports): 1, plus the times
    the loop that sent the work back most often did so. Each loop sends it
    back fewer times than its own limit (its last report escalates), so the
    attempt never passes `max_attempts`, the larger of the two limits (3)."""
    return 1 + max(task.verification_cycles, task.review_cycles)


def _issue_section(task: Task, triage: Any) -> dict[str, Any]:
    """The issue: number, title, link, the triage's type, body and labels."""
    issue_url = (
        f"{task.repository.url}/issues/{task.issue_number}"
        if task.issue_number
        else None
    )
    return {
        "number": task.issue_number,
        "title": task.title,
        "url": issue_url,
        "type": triage.type if triage else None,
        "original_body": task.description,
        "labels": _labels(task),
    }


def _pipeline_section(task: Task, attempt: int) -> dict[str, Any]:
    """Where the pipeline stands: its agent, the attempt and the status, with
    the reason when blocked or failed."""
    pipeline: dict[str, Any] = {
        "started_at": _timestamp(task.created_at),
        "current_agent": PHASE_TO_003_AGENT[task.phase],
        "attempt": attempt,
        "max_attempts": max(task.verification_max_cycles, task.review_max_cycles),
        "status": STATUS_TO_003[task.status],
    }
    if pipeline["status"] == "blocked":
        pipeline["blocked_reason"] = _blocked_reason(task)
    if task.status in (Status.FAILED, Status.CANCELLED) and task.errors:
        pipeline["failure_reason"] = task.errors[-1].get("message")
    return pipeline


def _blocked_reason(task: Task) -> str:
    """Why the pipeline is "blocked": the block's reason, the open
    escalation's (a gate's included: what the person is asked), or the
    pause."""
    if task.status == Status.BLOCKED:
        return task.blocked_reason
    if task.status == Status.PAUSED:
        return "paused on request"
    escalation = task.escalations.open().first()
    return escalation.detail if escalation is not None else ""


def _triage_section(triage: Any) -> dict[str, Any]:
    """The triage's verdict; without one the task proceeds."""
    return {
        "completed": triage is not None,
        "scope": triage.scope if triage else None,
        "complexity": triage.complexity if triage else None,
        "should_proceed": triage.should_proceed if triage else True,
        "rejection_reason": (triage.rejection_reason or None) if triage else None,
    }


def _analysis_section(analysis: Any) -> dict[str, Any]:
    """The analyst's brief for the writer, empty until there is one."""
    return {
        "completed": analysis is not None,
        "files": [
            {key: entry.get(key) for key in ("path", "purpose", "action")}
            for entry in _objects(analysis.files if analysis else [])
        ],
        "patterns": analysis.patterns if analysis else [],
        "test_requirement": _test_requirement(analysis),
        "must_do": analysis.must_do if analysis else [],
        "must_not_do": analysis.must_not_do if analysis else [],
        "brief": analysis.brief if analysis else None,
    }


TEST_REQUIREMENT_KEYS = ("required", "type", "location", "description")


def _test_requirement(analysis: Any) -> dict[str, Any]:
    """The analyst's test requirement with the format's four keys, null
    where it said nothing (a fresh task's too)."""
    given = analysis.test_requirement if analysis else {}
    given = given if isinstance(given, dict) else {}
    return {key: given.get(key) for key in TEST_REQUIREMENT_KEYS}


# What the writer's record says it did to a file, as the change's description.
CHANGE_DESCRIPTIONS = {
    "create": "created",
    "modify": "modified",
    "delete": "deleted",
    "rename": "renamed",
}


def _changes(writer: dict[str, Any]) -> list[dict[str, Any]]:
    """The writer's changes as the format's {file, description}: its own
    description when it gave one, else what it did to the file."""
    changes = []
    for change in writer.get("changes") or []:
        if not isinstance(change, dict):
            continue
        action = str(change.get("action") or "")
        description = change.get("description") or CHANGE_DESCRIPTIONS.get(
            action, action or None
        )
        changes.append({"file": change.get("file"), "description": description})
    return changes


def _writer_section(
    task: Task, analysis: Any, writer: dict[str, Any], attempt: int
) -> dict[str, Any]:
    """The writer's work: done once the task is past implementation, its
    changes and tests, and the newest feedback it was given."""
    past_writer = task.phase in (Phase.VERIFICATION, Phase.REVIEW, Phase.RELEASE)
    feedback = [
        *task.feedback_history.get("verification", []),
        *task.feedback_history.get("review", []),
    ]
    previous_feedback = (
        max(feedback, key=lambda item: item.get("at", "")) if feedback else None
    )
    return {
        "completed": past_writer or task.status == Status.COMPLETED,
        "attempt": attempt,
        "changes": _changes(writer),
        "test_written": bool(writer.get("test_files"))
        or bool(analysis and analysis.test_requirement.get("required")),
        "test_file": (writer.get("test_files") or [None])[0]
        or (analysis.test_requirement.get("location") if analysis else None),
        "summary": writer.get("summary"),
        "previous_feedback": previous_feedback["feedback"]
        if previous_feedback
        else None,
    }


def _build_section(build: Any) -> dict[str, Any]:
    """The newest verification cycle's build: what ran and what passed."""
    return {
        "completed": build is not None,
        "tests_passed": build.tests_passed if build else False,
        "lint_passed": build.lint_passed if build else False,
        "type_check_passed": build.type_check_passed if build else False,
        "errors": build.errors if build else [],
        "commands_run": [
            {key: entry.get(key) for key in ("command", "exit_code", "output")}
            for entry in _objects(build.commands_run if build else [])
        ],
    }


def _feedback_for_writer(task: Task, review: ReviewReport | None) -> str | None:
    """What the writer is sent back with: the reviewer's message when it
    rejected the change, or the build's (verification's) summary when it
    failed after the last review; null otherwise, an approval included."""
    verification = task.latest_verification_report()
    build_failed_last = (
        verification is not None
        and verification.recommendation == "request_changes"
        and (review is None or verification.created_at > review.created_at)
    )
    if build_failed_last:
        return (verification.feedback or {}).get("summary") or None
    if review is not None and review.assessment == "request_changes":
        return (review.feedback or {}).get("message") or None
    return None


def _review_section(task: Task, review: ReviewReport | None) -> dict[str, Any]:
    """The newest review: its verdict (NEEDS_INFO while the reviewer's question
    is open), findings and the message for the writer."""
    verdict = VERDICT_003.get(review.assessment) if review else None
    if _needs_info(task):
        verdict = "NEEDS_INFO"
    return {
        "completed": review is not None,
        "verdict": verdict,
        "findings": {
            "good": list((review.feedback or {}).get("good") or []) if review else [],
            "issues": [
                {
                    "file": comment.get("file"),
                    "line": comment.get("line"),
                    "issue": comment.get("issue"),
                    "severity": comment.get("severity"),
                }
                for comment in (review.comments if review else [])
            ],
        },
        "feedback_for_writer": _feedback_for_writer(task, review),
    }


def _commit_section(task: Task, writer: dict[str, Any]) -> dict[str, Any]:
    """The commit and its pull request, and whether the issue was closed."""
    return {
        "completed": task.status == Status.COMPLETED,
        "hash": task.commits[-1] if task.commits else None,
        "message": writer.get("commit_message"),
        "branch": task.branch or None,
        "pushed": bool(task.commits),
        "pr_created": bool(task.pr_url),
        "pr_url": task.pr_url or None,
        "issue_closed": task.status == Status.COMPLETED and bool(task.issue_number),
    }


def _communication_section(task: Task) -> dict[str, Any]:
    """The questions between roles and the escalations to a person."""
    return {
        "questions": [
            {
                "from": question.from_role,
                "to": question.to_role,
                "question": question.question,
                "answered": question.answered,
                "answer": question.answer or None,
            }
            for question in task.questions.all()
        ],
        "escalations": [
            {
                "agent": PHASE_TO_003_AGENT.get(escalation.phase, "orchestrator"),
                "reason": escalation.detail or escalation.get_reason_display(),
                "requires_human": True,
                "resolved": escalation.resolved_at is not None,
            }
            for escalation in task.escalations.order_by("created_at", "id")
        ],
    }


def _learnings_section(task: Task) -> dict[str, Any]:
    """What the agents noticed, and how the task ended once it has."""
    return {
        "session_id": task.task_id,
        "observations": [
            {"agent": item.agent, "type": item.type, "content": item.content}
            for item in task.learnings.order_by("created_at", "id")
        ],
        "outcome": task.status if task.is_terminal else None,
    }


def _writer_record(task: Task) -> dict[str, Any]:
    """The developer's newest writer.json (summary, commit message, changes)."""
    artifact = task.artifacts.filter(name="writer.json").order_by("-created_at")
    content = artifact.values_list("content", flat=True).first()
    try:
        record = json.loads(content) if content else {}
    except ValueError:
        return {}
    return record if isinstance(record, dict) else {}


def _labels(task: Task) -> list[str]:
    """The labels the triage put on the issue."""
    event = (
        task.events.filter(kind="tool", data__tool="add_labels", data__success=True)
        .order_by("-id")
        .first()
    )
    return list(event.data.get("labels") or []) if event else []


def _needs_info(task: Task) -> bool:
    """The reviewer's open NEEDS_INFO: an unresolved clarification asked in
    the review phase."""
    return task.escalations.filter(
        phase=Phase.REVIEW, reason="needs_clarification", resolved_at__isnull=True
    ).exists()


def _one_to_one(task: Task, relation: str) -> Any:
    """The related row of a reverse one-to-one, or None when there is none."""
    try:
        return getattr(task, relation)
    except Task._meta.get_field(relation).related_model.DoesNotExist:
        return None
