"""A task in the export formats of docs/domain/tasks.md#exports, for teams moving
onto Codex.

`task_envelope` is `task-envelope.yml`: the envelope's keys in their nesting and
order; `report_yaml` a verification or review report's `report-<n>.yml`.
`issue_state` is `issue-state.json`, the issue pipeline's state
(codex.tasks.issue_state). All are read-only views of the database; nothing is
stored in these formats.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import yaml

from codex.tasks.export_values import objects as _objects
from codex.tasks.export_values import timestamp as _timestamp
from codex.tasks.issue_state import issue_state
from codex.tasks.models import (
    Phase,
    ReviewReport,
    Task,
    VerificationReport,
)
from codex.tasks.models.artifact import CONTAINERS

__all__ = [
    "issue_state",
    "report_yaml",
    "review_report",
    "task_envelope",
    "task_envelope_yaml",
    "verification_report",
]


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
