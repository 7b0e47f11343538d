"""A child task's report to its parent, in the comment format of
docs/domain/fan-out.md#child-reports.

A child reports when its work is ready (review approved: "🤖 Child C1
complete: PR #10 ready for review") and when it stops without it (failed,
cancelled or escalated: "🤖 Child C2 failed: <reason>"). The report is a
comment on the parent's issue, posted once per child and outcome
(perform_once, found again by its marker), and recorded in the fan-out at
once; GitHub's webhook delivering the same comment later changes nothing
(one report per comment id).
"""

from __future__ import annotations

import re

from codex.children.models import Child, ChildReport
from codex.core.store import perform_once
from codex.repositories.forge import get_forge

REPORT_JOB = "codex.children.jobs.report_child"
_PR_NUMBER = re.compile(r"/pull/([0-9]+)$")
REASON_CHARS = 300


def report_body(child: Child) -> tuple[str, str] | None:
    """(outcome, comment) for the child task's state now; None while it is
    still at work. outcome is "success" or "failure"."""
    task = child.task
    if task.status == "escalated" and task.gates.open().exists():
        return None  # waiting at a gate for a person, not stopped
    if task.status in ("failed", "cancelled", "escalated"):
        reason = _stop_reason(task)
        return "failure", f"🤖 Child {child.child_id} failed: {task.status}: {reason}"
    if task.status == "in_progress" and task.phase == "release":
        number = pr_number(task.pr_url)
        if number is None:
            return None
        return (
            "success",
            f"🤖 Child {child.child_id} complete: PR #{number} ready for review",
        )
    return None


def pr_number(url: str) -> int | None:
    found = _PR_NUMBER.search(url or "")
    return int(found.group(1)) if found else None


def _stop_reason(task) -> str:
    event = task.events.filter(kind="transition", field="status").order_by("-id")
    reason = event.values_list("reason", flat=True).first() or task.status
    return " ".join(str(reason).split())[:REASON_CHARS]


def report(child: Child) -> ChildReport | None:
    """Post the child's report on the parent's issue (once) and record it in
    the fan-out (which may start the analysis). None while it has nothing to
    report."""
    found = report_body(child)
    fan_out = child.fan_out
    if found is None or fan_out.issue_number is None:
        return None
    outcome, text = found
    task = child.task
    # The transition that brought the child here: one report per arrival,
    # however often the job runs (a child escalated, resumed and escalated
    # again reports twice).
    stamp = (
        task.events.filter(kind="transition")
        .order_by("-id")
        .values_list("id", flat=True)
        .first()
        or 0
    )
    marker = f"<!-- codex:child-report:{task.task_id}:{outcome}:{stamp} -->"
    forge = get_forge(task.repository)
    issue = fan_out.issue_number
    comment = perform_once(
        f"fanout:report:{task.repository.pk}:{issue}:{task.task_id}:{outcome}:{stamp}",
        lambda: dict(forge.comment(issue, f"{text}\n\n{marker}")),
        lookup=lambda: (
            None if (seen := forge.find_comment(issue, marker)) is None else dict(seen)
        ),
        task=task,
        kind="comment",
    )
    return fan_out.receive_comment(
        comment_id=int(comment["id"]),
        body=comment["body"],
        by=f"child:{child.child_id}:{task.task_id}",
        author="codex",
        child_task=task,
    )
