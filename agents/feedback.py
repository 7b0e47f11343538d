"""Feedback between cycles, with its specifics: what the reviewer or QA found
reaches the developer's next cycle item by item, the developer answers each
item (fixed, or why not), and the reviewer of the next cycle reads those
answers next to the findings.

A finding has an id the developer answers by: the reviewer's comments keep
their report ids (R001, ...); QA's findings are numbered Q001, ... in the
order of the report's feedback items (failing tests, failing checks, unmet
criteria). `findings` reads them from the task's newest feedback entry;
`feedback_prompt` renders them for the developer (labelled as the reviewer's
or QA's findings, fenced: their text quotes code and output written by
others); `responses_schema` makes the developer's submit_result answer every
id; `responses_document` is what the reviewer reads back.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agents.prompts import untrusted

if TYPE_CHECKING:
    from codex.tasks.models import Task

RESPONSES_DOCUMENT = "feedback-responses.md"
OUTPUT_TAIL_CHARS = 4000
LOOP_OWNERS = {"review": "the reviewer", "verification": "QA"}


@dataclass(frozen=True)
class Finding:
    """One thing the developer must answer: its id, where, what and a hint."""

    id: str
    issue: str
    file: str = ""
    line: int | None = None
    suggestion: str = ""
    severity: str = ""

    def render(self) -> str:
        where = ""
        if self.file:
            where = f" {self.file}" + (f":{self.line}" if self.line else "")
        kind = f" [{self.severity}]" if self.severity else ""
        text = f"- {self.id}{kind}{where}: {self.issue}"
        if self.suggestion:
            text += f"\n  Suggested fix: {self.suggestion}"
        return text


@dataclass(frozen=True)
class Feedback:
    """The newest feedback entry of either loop, read for the developer."""

    loop: str  # "review" or "verification"
    cycle: int
    summary: str
    findings: list[Finding]
    output: str = ""  # the tail of the failing command's output (QA)

    @property
    def owner(self) -> str:
        return LOOP_OWNERS.get(self.loop, self.loop)

    @property
    def ids(self) -> list[str]:
        return [finding.id for finding in self.findings]


def latest(task: Task) -> Feedback | None:
    """The newest feedback of either loop, or None."""
    entries = [
        (entry.get("at", ""), loop, entry)
        for loop, items in (task.feedback_history or {}).items()
        for entry in items
    ]
    if not entries:
        return None
    _, loop, entry = max(entries, key=lambda item: item[0])
    data = entry.get("feedback") or {}
    if loop == "review":
        return Feedback(
            loop,
            int(entry.get("cycle") or 0),
            str(data.get("message") or data.get("summary") or ""),
            _review_findings(data),
        )
    return Feedback(
        loop,
        int(entry.get("cycle") or 0),
        str(data.get("summary") or ""),
        _qa_findings(data),
        output=str(data.get("test_output") or "")[-OUTPUT_TAIL_CHARS:],
    )


def _review_findings(data: dict[str, Any]) -> list[Finding]:
    findings = []
    comments = data.get("comments") or []
    # Blocking first: they decide the next review.
    ordered = sorted(comments, key=lambda c: c.get("severity") != "blocking")
    for number, comment in enumerate(ordered, 1):
        line = comment.get("line")
        findings.append(
            Finding(
                id=str(comment.get("id") or f"R{number:03}"),
                issue=str(comment.get("issue") or comment.get("body") or ""),
                file=str(comment.get("file") or ""),
                line=line if isinstance(line, int) else None,
                suggestion=str(comment.get("suggestion") or ""),
                severity=str(comment.get("severity") or ""),
            )
        )
    if not findings and data.get("message"):
        findings.append(Finding(id="R001", issue=str(data["message"])))
    return findings


def _qa_findings(data: dict[str, Any]) -> list[Finding]:
    items = [str(item) for item in data.get("items") or [] if str(item).strip()]
    if not items and data.get("summary"):
        items = [str(data["summary"])]
    return [Finding(id=f"Q{n:03}", issue=item) for n, item in enumerate(items, 1)]


def feedback_prompt(feedback: Feedback) -> str:
    """The findings for the developer's first message: labelled as what they
    are, fenced, with how to answer them."""
    listed = "\n".join(finding.render() for finding in feedback.findings)
    body = f"Summary: {feedback.summary}\n\n{listed}".strip()
    if feedback.output:
        body += f"\n\nThe end of the failing test output:\n{feedback.output}"
    return (
        f"This cycle is for {feedback.owner}'s findings (cycle "
        f"{feedback.cycle}), which asked for changes. Work through every finding; "
        "then answer each one by its id in feedback_responses: fixed (say how), "
        "or not_fixed (say why: it is wrong, out of scope, or needs a person).\n"
        + untrusted(f"{feedback.owner}'s findings", body)
    )


def responses_schema(schema: dict[str, Any], ids: list[str]) -> dict[str, Any]:
    """`schema` (the developer's) with feedback_responses required: one
    answer per finding id."""
    if not ids:
        return schema
    properties = dict(schema.get("properties") or {})
    properties["feedback_responses"] = {
        "type": "array",
        "minItems": len(ids),
        "items": {
            "type": "object",
            "properties": {
                "id": {"type": "string", "enum": list(ids)},
                "status": {"type": "string", "enum": ["fixed", "not_fixed"]},
                "note": {"type": "string", "minLength": 1},
            },
            "required": ["id", "status", "note"],
        },
    }
    return {
        **schema,
        "properties": properties,
        "required": [*schema.get("required", []), "feedback_responses"],
    }


def missing_answers(responses: list[dict[str, Any]], ids: list[str]) -> list[str]:
    """The finding ids `responses` leaves unanswered."""
    answered = {str(item.get("id")) for item in responses}
    return [finding_id for finding_id in ids if finding_id not in answered]


def responses_document(feedback: Feedback, responses: list[dict[str, Any]]) -> str:
    """feedback-responses.md: each finding and the developer's answer."""
    answers = {str(item.get("id")): item for item in responses}
    lines = [
        f"# Answers to {feedback.owner}'s findings ({feedback.loop} cycle "
        f"{feedback.cycle})",
        "",
    ]
    for finding in feedback.findings:
        answer = answers.get(finding.id) or {}
        status = answer.get("status") or "not answered"
        lines.append(finding.render())
        lines.append(f"  Developer: {status}. {answer.get('note') or ''}".rstrip())
    return "\n".join(lines).strip() + "\n"
