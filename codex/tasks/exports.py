"""A task in the export formats of docs/domain/tasks.md#exports, for teams moving
onto Codex.

`task_envelope` is `task-envelope.yml`: the envelope's keys in their nesting and
order. `issue_state` is `issue-state.json`, the issue pipeline's state.
Both are read-only views of the database; nothing is stored in these formats.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime
from typing import Any

import yaml

from codex.tasks.models import (
    Phase,
    ReviewReport,
    Status,
    Task,
    VerificationReport,
)
from codex.tasks.models.artifact import CONTAINERS

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


def _timestamp(value: datetime | str | None) -> str | None:
    """Export timestamps: ISO 8601 in UTC with a Z."""
    if value is None:
        return None
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    return value.strftime("%Y-%m-%dT%H:%M:%SZ")


def _storage_path(task: Task, name: str) -> str:
    return f"{CONTAINERS.get(name, 'agent-spec')}/{task.task_id}/{name}"


def _phases(task: Task) -> dict[str, dict[str, Any]]:
    progress = task.phase_progress
    phases: dict[str, dict[str, Any]] = {}
    for phase in Phase.values:
        entry = progress.get(phase, {})
        out: dict[str, Any] = {"status": entry.get("status", "pending")}
        for key in ("started_at", "completed_at"):
            if entry.get(key):
                out[key] = _timestamp(entry[key])
        # The implementation phase has no agent_invocations in the envelope:
        # its progress is the tasks done and the commits.
        if entry.get("agent_invocations") and phase != Phase.IMPLEMENTATION:
            out["agent_invocations"] = entry["agent_invocations"]
        if phase == Phase.INTAKE and out["status"] != "pending":
            out["output_path"] = _storage_path(task, "spec.md")
        elif phase == Phase.PLANNING and out["status"] != "pending":
            out["output_paths"] = [
                _storage_path(task, "plan.md"),
                _storage_path(task, "tasks.md"),
            ]
        elif phase == Phase.IMPLEMENTATION and out["status"] != "pending":
            out.update(
                current_task=task.current_task,
                total_tasks=task.total_tasks,
                pr_url=task.pr_url or None,
                branch=task.branch or None,
                commits=list(task.commits),
            )
        elif entry.get("output_paths"):
            out["output_paths"] = list(entry["output_paths"])
        phases[phase] = out
    return phases


def task_envelope(task: Task) -> dict[str, Any]:
    """The task as `task-envelope.yml` (docs/domain/tasks.md#exports), key for
    key."""
    escalations = [
        {
            "timestamp": _timestamp(escalation.created_at),
            "phase": escalation.phase,
            "reason": escalation.reason,
            "questions": list(escalation.questions),
            "resolved_at": _timestamp(escalation.resolved_at),
            "resolution": escalation.resolution or None,
        }
        for escalation in task.escalations.order_by("created_at", "id")
    ]
    return {
        "task_id": task.task_id,
        "created_at": _timestamp(task.created_at),
        "created_by": task.created_by,
        "repository": task.repository.url,
        "request": {
            "title": task.title,
            "description": task.description,
            "priority": task.priority,
            "acceptance_criteria": task.acceptance_criteria,
        },
        "status": task.status,
        "phase": task.phase,
        "current_agent": task.current_agent,
        "phases": _phases(task),
        "feedback_loops": {
            "verification": {
                "cycle_count": task.verification_cycles,
                "max_cycles": task.verification_max_cycles,
                "history": task.feedback_history.get("verification", []),
            },
            "review": {
                "cycle_count": task.review_cycles,
                "max_cycles": task.review_max_cycles,
                "history": task.feedback_history.get("review", []),
            },
        },
        "errors": [
            {
                "timestamp": _timestamp(error.get("timestamp")),
                "phase": error.get("phase"),
                "exit_code": error.get("exit_code"),
                "message": error.get("message"),
                "resolution": error.get("resolution") or None,
            }
            for error in task.errors
        ],
        "escalations": escalations,
        "updated_at": _timestamp(task.updated_at),
        "version": task.version,
        "lease_holder": task.lease_holder if task.lease_is_active else None,
    }


class _LiteralDumper(yaml.SafeDumper):
    """Multi-line strings as YAML block literals, easier to read in the export."""


def _str_presenter(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    value = str(value)  # choices (TextChoices members) are str subclasses
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_LiteralDumper.add_multi_representer(str, _str_presenter)


def task_envelope_yaml(
    task: Task, redact: Callable[[dict[str, Any]], dict[str, Any]] | None = None
) -> str:
    """`task-envelope.yml` for the task; `redact` may leave out what the
    reader's role may not see."""
    header = (
        "# task-envelope.yml\n"
        f"# Location: agent-state/{task.task_id}/task-envelope.yml\n"
    )
    envelope = task_envelope(task)
    body = yaml.dump(
        redact(envelope) if redact else envelope,
        Dumper=_LiteralDumper,
        sort_keys=False,
        allow_unicode=True,
        default_flow_style=False,
    )
    return header + body


def _objects(value: Any) -> list[dict[str, Any]]:
    return [item for item in value if isinstance(item, dict)] if value else []


# The verification report's keys, in the format's order
# (docs/domain/tasks.md#verification-report).
FAILURE_KEYS = ("name", "error", "file", "line")
CRITERION_KEYS = ("criterion", "status", "evidence")
FEEDBACK_ITEM_KEYS = ("severity", "description", "file", "line", "suggestion")


def _feedback_item(item: Any) -> dict[str, Any]:
    """A feedback item as the format's object; QA's items written as plain
    text are the description."""
    if not isinstance(item, dict):
        item = {"description": str(item)}
    return {key: item.get(key) for key in FEEDBACK_ITEM_KEYS}


def verification_report(report: VerificationReport) -> dict[str, Any]:
    """A verification report as its `report-<cycle>.yml` (the storage layout's
    agent-verification/<task id>/report-<n>.yml), key for key
    (docs/domain/tasks.md#verification-report): only the format's fields,
    each as QA and the real test runs recorded it."""
    feedback = report.feedback if isinstance(report.feedback, dict) else {}
    criteria = []
    for entry in _objects(report.acceptance_criteria):
        criterion = {key: entry.get(key) for key in CRITERION_KEYS}
        if entry.get("issue_ref"):
            criterion["issue_ref"] = entry["issue_ref"]
        criteria.append(criterion)
    return {
        "task_id": report.task.task_id,
        "pr_url": report.pr_url or None,
        "created_at": _timestamp(report.created_at),
        "cycle": report.cycle,
        "test_results": {
            "summary": {
                "passed": report.tests_passed,
                "failed": report.tests_failed,
                "skipped": report.tests_skipped,
                "total": report.tests_total,
            },
            "failures": [
                {key: failure.get(key) for key in FAILURE_KEYS}
                for failure in _objects(report.failures)
            ],
        },
        "acceptance_criteria": criteria,
        "recommendation": report.recommendation,
        "feedback": {
            "priority": feedback.get("priority"),
            "summary": feedback.get("summary"),
            "items": [_feedback_item(item) for item in feedback.get("items") or []],
        },
    }


# The review report's keys, in the format's order
# (docs/domain/tasks.md#review-report).
REVIEW_COMMENT_KEYS = (
    "id",
    "severity",
    "file",
    "line",
    "issue",
    "suggestion",
    "category",
)
VULNERABILITY_KEYS = ("type", "description", "severity", "file", "line")
REVIEW_FEEDBACK_KEYS = (
    "blocking_count",
    "suggestion_count",
    "priority_order",
    "message",
)


def review_report(report: ReviewReport) -> dict[str, Any]:
    """A review report as its `report-<cycle>.yml` (agent-review/<task
    id>/report-<n>.yml), key for key (docs/domain/tasks.md#review-report).

    Every value is the report's own, as the reviewer (and a person's review
    on the pull request) wrote it: nothing is counted here from a field the
    reviewer does not write. A section the reviewer did not give is null,
    never a pass."""
    security = report.security if isinstance(report.security, dict) else {}
    feedback = report.feedback if isinstance(report.feedback, dict) else {}
    return {
        "task_id": report.task.task_id,
        "pr_url": report.pr_url or None,
        "created_at": _timestamp(report.created_at),
        "cycle": report.cycle,
        "assessment": report.assessment,
        "comments": [
            {key: comment.get(key) for key in REVIEW_COMMENT_KEYS}
            for comment in _objects(report.comments)
        ],
        "security": {
            "vulnerabilities_found": security.get("vulnerabilities_found"),
            "items": [
                {key: item.get(key) for key in VULNERABILITY_KEYS}
                for item in _objects(security.get("items"))
            ],
        },
        "feedback": {key: feedback.get(key) for key in REVIEW_FEEDBACK_KEYS},
    }


REPORT_EXPORTS = {"verification": verification_report, "review": review_report}


def report_yaml(report: VerificationReport | ReviewReport) -> str:
    """The report as the YAML file of the storage layout, with a header
    naming where it lives (docs/domain/tasks.md#exports)."""
    kind = "verification" if isinstance(report, VerificationReport) else "review"
    header = f"# {kind}-report.yml\n# Location: {report.path}\n"
    body = yaml.dump(
        REPORT_EXPORTS[kind](report),
        Dumper=_LiteralDumper,
        sort_keys=False,
        allow_unicode=True,
        default_flow_style=False,
    )
    return header + body


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
