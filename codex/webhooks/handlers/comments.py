"""`issue_comment` (issues and pull requests alike): child reports
(docs/domain/fan-out.md#child-reports) and `@codex` commands."""

from __future__ import annotations

from datetime import datetime

from django.utils.dateparse import parse_datetime

from codex.children.models import FanOut
from codex.children.parsing import MARKER
from codex.webhooks.commands import parse_command, run_command
from codex.webhooks.handlers.common import (
    Context,
    Result,
    ignored,
    obj,
    processed,
    reply_once,
    sender_can_write,
    task_for_issue,
)


def handle(context: Context) -> Result:
    """A new comment: a "🤖 Child" report goes to the parent's fan-out; a
    `@codex` command from a writer is run and answered once; others ignored."""
    if context.action != "created":
        return ignored(f"issue_comment.{context.action} needs nothing")
    issue = obj(context.payload.get("issue"))
    comment = obj(context.payload.get("comment"))
    body = comment.get("body")
    comment_id = comment.get("id")
    number = issue.get("number")
    if not isinstance(body, str) or not isinstance(comment_id, int):
        return ignored("no comment body or id")
    if not isinstance(number, int) or number < 1:
        return ignored("no issue number")
    if MARKER in body:
        return _child_report(context, issue, comment, body)
    command = parse_command(body)
    if command is None:
        return ignored("no @codex command")
    if not sender_can_write(context):
        return ignored(f"{context.sender} has no write access; command not run")
    task = task_for_issue(context.repository, issue)
    reply = run_command(command, task, by=context.actor, login=context.sender)
    reply_once(
        context,
        number,
        f"reply:{comment_id}",
        f"@{context.sender} {reply}",
        task=task,
    )
    return processed(f"@codex {command.name}: {reply.splitlines()[0]}")


def _child_report(context: Context, issue: dict, comment: dict, body: str) -> Result:
    number = issue["number"]
    fan_out = (
        FanOut.objects.filter(parent__repository=context.repository)
        .filter(issue_number=number)
        .first()
        or FanOut.objects.filter(
            parent__repository=context.repository,
            parent__issue_number=number,
            issue_number__isnull=True,
        ).first()
    )
    if fan_out is None:
        return ignored(f"a child report, but issue #{number} has no fan-out")
    report = fan_out.receive_comment(
        comment_id=comment["id"],
        body=body,
        by=context.actor,
        author=context.sender,
        reported_at=_created_at(comment),
    )
    if report is None:
        return ignored("the child marker is there, but not a valid report")
    return processed(
        f"child {report.child_id} reported {report.status_type} "
        f"to the fan-out of {fan_out.parent.task_id}"
    )


def _created_at(comment: dict) -> datetime | None:
    value = comment.get("created_at")
    try:
        return parse_datetime(value) if isinstance(value, str) else None
    except ValueError:
        return None
