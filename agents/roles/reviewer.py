"""Reviewer (review): reads the diff and writes the review report
(docs/domain/tasks.md#review-report) with blocking and suggestion comments,
each with its category, and the security scan: how many vulnerabilities it
found and each one as {type (a CWE id), description, severity, file, line}.
The report keeps what the reviewer said, and the feedback's counts and
priority order come from its own comments.

The comments are also posted on the pull request
(CODEX_REVIEW_POST_COMMENTS, default on): `review_body` renders them as one
Markdown review whose text, written by the model from untrusted code, is
made inert first (`inert`): no HTML, no @mentions, no #references, no
hidden characters, bounded length. `review_marker` identifies the review of
one task's cycle, so a retried step finds it instead of posting again.
"""

from __future__ import annotations

import html
import re
from typing import TYPE_CHECKING, Any

from django.conf import settings

from agents import review_inputs
from agents.feedback import RESPONSES_DOCUMENT
from agents.prompts import strip_hidden
from agents.roles.base import COMMON_RULES, Role, RoleContext, Step
from codex.core.errors import ClassifiedFailure
from codex.core.store import SideEffectUncertain, perform_once
from codex.tasks.runners import PhaseResult

if TYPE_CHECKING:
    from agents.tools import Tool
    from codex.repositories.forge import Forge
    from codex.tasks.models import Task

# GitHub refuses bodies over 65536 characters; leave room for the marker.
BODY_MAX_CHARS = 60_000
FIELD_MAX_CHARS = 2_000
ZERO_WIDTH_SPACE = "\u200b"

SYSTEM_PROMPT = f"""\
You are the code reviewer of an autonomous software team. The pull request's
diff against the base branch is in the task description; read the surrounding
code in the worktree where you need it. In a later cycle, the developer's
answers to the previous findings (feedback-responses.md) say what was fixed
and why anything was not: check each answer against the diff. Comment on
correctness, clarity, tests and security, and give each comment its category.
A comment is "blocking" when the change must not be merged without fixing it,
else a "suggestion". Approve only without blocking comments. Scan the change
for vulnerabilities: report each in security.items with its CWE id (e.g.
CWE-89 for SQL built from user input), and set vulnerabilities_found to how
many you list (0 when none); each vulnerability is also a comment of category
security, blocking unless its severity is low. List in good what the change
does well (kept in the record, and worth keeping in later changes). When you
cannot judge the change without an answer only a person has (an unclear
requirement, a design choice the request leaves open), set assessment to
needs_info with the questions: a person answers before the review goes on.

{COMMON_RULES}"""

# Comment categories: the format's "security" and "maintainability" and the
# other things a review looks at (docs/domain/tasks.md#review-report).
CATEGORIES = (
    "correctness",
    "security",
    "performance",
    "maintainability",
    "tests",
    "documentation",
    "style",
)
VULNERABILITY_SEVERITIES = ("critical", "high", "medium", "low")
CWE = r"^CWE-[0-9]{1,5}$"

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "assessment": {
            "type": "string",
            "enum": ["approve", "request_changes", "needs_info"],
        },
        "summary": {"type": "string"},
        "good": {"type": "array", "items": {"type": "string"}},
        "questions": {"type": "array", "items": {"type": "string"}},
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
                    "category": {"type": "string", "enum": list(CATEGORIES)},
                },
                "required": ["severity", "issue", "category"],
            },
        },
        "security": {
            "type": "object",
            "properties": {
                "vulnerabilities_found": {"type": "integer", "minimum": 0},
                "items": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "type": {"type": "string", "pattern": CWE},
                            "description": {"type": "string"},
                            "severity": {
                                "type": "string",
                                "enum": list(VULNERABILITY_SEVERITIES),
                            },
                            "file": {"type": "string"},
                            "line": {"type": "integer"},
                        },
                        "required": ["type", "description", "severity"],
                    },
                },
            },
            "required": ["vulnerabilities_found", "items"],
        },
    },
    "required": ["assessment", "summary", "comments", "security"],
}
COMMENT_KEYS = ("id", "severity", "file", "line", "issue", "suggestion", "category")
VULNERABILITY_KEYS = ("type", "description", "severity", "file", "line")

INSTRUCTIONS = "Review the pull request and submit your review."


def to_phase_result(result: dict[str, Any], context: RoleContext) -> PhaseResult:
    if result["assessment"] == "needs_info":
        # NEEDS_INFO: a person answers before the review can conclude.
        questions = [str(q) for q in result.get("questions") or []] or [
            result["summary"]
        ]
        return PhaseResult.escalate(
            f"NEEDS_INFO: the reviewer needs information: {result['summary']}",
            questions=questions,
            code="needs_clarification",
        )
    comments = [
        {key: comment.get(key) for key in COMMENT_KEYS} | {"id": f"R{number:03}"}
        for number, comment in enumerate(result["comments"], 1)
    ]
    blocking = [c["id"] for c in comments if c["severity"] == "blocking"]
    suggestions = [c["id"] for c in comments if c["severity"] == "suggestion"]
    assessment = result["assessment"]
    if blocking:
        assessment = "request_changes"
    security = result["security"]
    return PhaseResult(
        review={
            "assessment": assessment,
            "comments": comments,
            "security": {
                "vulnerabilities_found": security["vulnerabilities_found"],
                "items": [
                    {key: item.get(key) for key in VULNERABILITY_KEYS}
                    for item in security["items"]
                ],
            },
            # The developer's next cycle answers each comment by its id,
            # blocking ones first.
            "feedback": {
                "blocking_count": len(blocking),
                "suggestion_count": len(suggestions),
                "priority_order": [*blocking, *suggestions],
                "message": result["summary"],
                "good": [str(item) for item in result.get("good") or []],
            },
        }
    )


def check_security(submitted: dict[str, Any]) -> str:
    """Why a submitted review's security scan contradicts itself, or "": the
    count it gives is the number of vulnerabilities it lists."""
    security = submitted.get("security") or {}
    listed = len(security.get("items") or [])
    found = security.get("vulnerabilities_found")
    if found != listed:
        return (
            f"security.vulnerabilities_found is {found} but security.items lists "
            f"{listed}: list every vulnerability you found, one item each, and "
            "give their number"
        )
    return ""


_MENTION = re.compile(r"@(?=[A-Za-z0-9])")
_REFERENCE = re.compile(r"#(?=\d)")


def inert(text: Any, limit: int = FIELD_MAX_CHARS) -> str:
    """`text` safe to put in a Markdown comment: hidden characters and HTML
    comments dropped, HTML escaped (no tags, no markers), @mentions and
    #references broken with a zero-width space (no notifications, no
    cross-references), on one line, at most `limit` characters."""
    cleaned = " ".join(strip_hidden(str(text or "")).split())
    if len(cleaned) > limit:
        cleaned = cleaned[: limit - 1] + "…"
    cleaned = html.escape(cleaned, quote=False)
    cleaned = _MENTION.sub("@" + ZERO_WIDTH_SPACE, cleaned)
    return _REFERENCE.sub("#" + ZERO_WIDTH_SPACE, cleaned)


def review_marker(task_id: str, cycle: int) -> str:
    """The hidden line that identifies the review of `task_id`'s `cycle`."""
    return f"<!-- codex-review {task_id} cycle {cycle} -->"


def _location(comment: dict[str, Any]) -> str:
    path = inert(comment.get("file") or "", 300).replace("`", "")
    if not path:
        return ""
    line = comment.get("line")
    return f" `{path}:{line}`" if isinstance(line, int) else f" `{path}`"


def review_body(task_id: str, cycle: int, review: dict[str, Any]) -> str:
    """The review report as one Markdown review on the pull request."""
    comments = review.get("comments") or []
    verdict = (
        "approved" if review.get("assessment") == "approve" else "changes requested"
    )
    lines = [
        review_marker(task_id, cycle),
        f"**Codex review of {task_id}, cycle {cycle}: {verdict}**",
        "",
        inert((review.get("feedback") or {}).get("message") or ""),
    ]
    for severity, title in (("blocking", "Blocking"), ("suggestion", "Suggestions")):
        chosen = [c for c in comments if c.get("severity") == severity]
        if not chosen:
            continue
        lines += ["", f"**{title}**", ""]
        for comment in chosen:
            item = f"- {inert(comment.get('id', ''), 20)}{_location(comment)}: "
            item += inert(comment.get("issue"))
            if comment.get("suggestion"):
                item += f"  \n  Suggestion: {inert(comment['suggestion'])}"
            lines.append(item)
    vulnerabilities = (review.get("security") or {}).get("items") or []
    if vulnerabilities:
        lines += ["", "**Security**", ""]
        for item in vulnerabilities:
            entry = (
                f"- {inert(item.get('type'), 20)} ({inert(item.get('severity'), 20)})"
            )
            entry += f"{_location(item)}: {inert(item.get('description'))}"
            lines.append(entry)
    body = "\n".join(lines).strip() + "\n"
    if len(body) > BODY_MAX_CHARS:
        body = body[:BODY_MAX_CHARS] + "\n\n[cut; the full review is in Codex]\n"
    return body


def post_review(task: Task, forge: Forge, branch: str, review: dict[str, Any]) -> None:
    """Post the reviewer's comments on the open pull request as one review,
    once per review cycle (perform_once, found again by its marker), when
    CODEX_REVIEW_POST_COMMENTS is on and there are comments. Posting is a
    courtesy to the people watching the pull request: a failure is
    recorded on the task and does not undo the review, whose report is
    the record the pipeline acts on."""
    if not getattr(settings, "CODEX_REVIEW_POST_COMMENTS", True):
        return
    if not review.get("comments"):
        return
    cycle = task.review_cycles + 1
    body = review_body(task.task_id, cycle, review)
    marker = review_marker(task.task_id, cycle)
    try:
        pull = forge.find_pull_request(branch)
        if pull is None or pull["state"] != "open":
            return
        number = pull["number"]
        posted = perform_once(
            f"pr:review:{task.repository.pk}:{number}:{task.task_id}:{cycle}",
            lambda: dict(forge.post_review(number, body)),
            lookup=lambda: (
                dict(found) if (found := forge.find_review(number, marker)) else None
            ),
            task=task,
            kind="comment",
        )
    except (ClassifiedFailure, SideEffectUncertain) as exc:
        task.record(
            "tool",
            by="agent:reviewer",
            reason=f"review comments not posted: {exc}"[:2000],
            data={"tool": "post_review", "success": False, "cycle": cycle},
        )
        return
    task.record(
        "tool",
        by="agent:reviewer",
        reason=f"review comments posted: {posted.get('url', '')}",
        data={
            "tool": "post_review",
            "success": True,
            "cycle": cycle,
            "comment": posted.get("id"),
        },
    )


class Reviewer(Role):
    """The review phase: the diff against the base branch and what QA
    found; the comments posted on the pull request."""

    def prepare(self, step: Step) -> str:
        diff = review_inputs.diff_prompt(step.worktree, step.base_ref)
        results = review_inputs.qa_results(step.task)
        return f"{diff}\n\n{results}" if results else diff

    def tools(self, step: Step) -> list[Tool]:
        return [review_inputs.diff_tool(step.worktree, step.base_ref)]

    def check_submission(self, step: Step, submitted: dict[str, Any]) -> str:
        return check_security(submitted)

    def finish(self, step: Step, submitted: dict[str, Any]) -> PhaseResult:
        result = self.to_phase_result(submitted, step.context)
        if result.review:
            post_review(step.task, step.forge, step.branch, result.review)
        return result


ROLE = Reviewer(
    name="reviewer",
    phase="review",
    system_prompt=SYSTEM_PROMPT,
    schema=SCHEMA,
    to_phase_result=to_phase_result,
    instructions=INSTRUCTIONS,
    documents=("spec.md", "plan.md", RESPONSES_DOCUMENT),
)
