"""Reviewer (review): reads the diff and writes the review report (spec 002
§4.5) with blocking and suggestion comments and security findings."""

from __future__ import annotations

from typing import Any

from agents.roles.base import COMMON_RULES, Role, RoleContext
from codex.tasks.runners import PhaseResult

SYSTEM_PROMPT = f"""\
You are the code reviewer of an autonomous software team. The pull request's
diff against the base branch is in the task description; read the surrounding
code in the worktree where you need it. Comment on correctness, clarity, tests
and security. A comment is "blocking" when the change must not be merged
without fixing it, else a "suggestion". Approve only without blocking
comments.

{COMMON_RULES}"""

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "assessment": {"type": "string", "enum": ["approve", "request_changes"]},
        "summary": {"type": "string"},
        "comments": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "severity": {"type": "string", "enum": ["blocking", "suggestion"]},
                    "file": {"type": "string"},
                    "line": {"type": "integer"},
                    "issue": {"type": "string"},
                    "suggestion": {"type": "string"},
                },
                "required": ["severity", "issue"],
            },
        },
        "security": {
            "type": "object",
            "properties": {
                "issues_found": {"type": "boolean"},
                "findings": {"type": "array", "items": {"type": "string"}},
            },
        },
    },
    "required": ["assessment", "summary", "comments"],
}

INSTRUCTIONS = "Review the pull request and submit your review."


def to_phase_result(result: dict[str, Any], context: RoleContext) -> PhaseResult:
    comments = []
    for number, comment in enumerate(result["comments"], 1):
        comments.append({"id": f"R{number:03}", **comment})
    blocking = sum(1 for c in comments if c["severity"] == "blocking")
    assessment = result["assessment"]
    if blocking:
        assessment = "request_changes"
    security = result.get("security") or {"issues_found": False, "findings": []}
    return PhaseResult(
        review={
            "assessment": assessment,
            "comments": comments,
            "security": security,
            "feedback": {
                "blocking_count": blocking,
                "message": result["summary"],
            },
        }
    )


ROLE = Role(
    name="reviewer",
    phase="review",
    system_prompt=SYSTEM_PROMPT,
    schema=SCHEMA,
    to_phase_result=to_phase_result,
    instructions=INSTRUCTIONS,
)
