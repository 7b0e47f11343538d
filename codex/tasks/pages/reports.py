"""The verification and review reports as the task page shows them.

The reports' JSON comes from agents: every list is checked to be a list of
objects before a template iterates it, so a missing or malformed section is an
absent section, never `dict.items` rendered as bullets.
"""

from __future__ import annotations

from typing import Any

from codex.tasks.models import ReviewReport, VerificationReport


def _section(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _entries(value: Any) -> list[dict[str, Any]]:
    """The objects of a JSON list; anything else is no entries."""
    if not isinstance(value, list):
        return []
    return [entry for entry in value if isinstance(entry, dict)]


def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def verification_view(report: VerificationReport) -> dict[str, Any]:
    """QA's report: counts, failures, acceptance criteria and feedback."""
    feedback = _section(report.feedback)
    return {
        "report": report,
        "failures": _entries(report.failures),
        "criteria": _entries(report.acceptance_criteria),
        "feedback_summary": _text(feedback.get("summary")),
        "feedback_priority": _text(feedback.get("priority")),
        "feedback_items": _entries(feedback.get("items")),
    }


def review_view(report: ReviewReport) -> dict[str, Any]:
    """The reviewer's report: comments, the security findings and the message."""
    security = _section(report.security)
    feedback = _section(report.feedback)
    findings = _entries(security.get("items"))
    found = security.get("vulnerabilities_found")
    return {
        "report": report,
        "comments": _entries(report.comments),
        "security_items": findings,
        # Said only when the reviewer said it: an absent section is not a pass.
        "security_clear": type(found) is int and found == 0 and not findings,
        "feedback_message": _text(feedback.get("message")),
    }
