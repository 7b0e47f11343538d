"""`issues`: an issue carrying the trigger label becomes a task."""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ValidationError

from codex.claims.models import IssueClaim
from codex.tasks.models import CreatedBy, Task
from codex.tasks.models.task import TITLE_MAX_LENGTH, IdempotencyMismatch
from codex.webhooks.handlers.common import (
    Context,
    Result,
    ignored,
    obj,
    processed,
    reply_once,
    sender_can_write,
)

NOT_AUTHORIZED = (
    "Thanks for the request! Codex only starts work on issues labelled "
    "`{label}` by someone with write access to this repository, so nothing "
    "will happen yet. A maintainer can add the label to start it."
)


def trigger_label() -> str:
    """The label that asks Codex to work on an issue."""
    return settings.CODEX_TRIGGER_LABEL


def _has_label(issue: dict, name: str) -> bool:
    wanted = name.casefold()  # GitHub label names are case-insensitive
    return any(
        isinstance(label, dict) and str(label.get("name", "")).casefold() == wanted
        for label in issue.get("labels") or []
    )


def plan_label() -> str:
    """The label that asks for the plan to be approved before any code."""
    return getattr(settings, "CODEX_PLAN_LABEL", "codex:plan")


def handle(context: Context) -> Result:
    """opened with the trigger label, or labelled with it: from someone with
    write access, create the task (idempotently: one per issue) and claim the
    issue for it; from anyone else, one polite comment on the issue."""
    payload = context.payload
    issue = obj(payload.get("issue"))
    number = issue.get("number")
    label = trigger_label()
    if not isinstance(number, int) or number < 1:
        return ignored("no issue number")
    if context.action == "labeled":
        if str(obj(payload.get("label")).get("name", "")).casefold() != (
            label.casefold()
        ):
            return ignored(f"label is not {label!r}")
    elif context.action == "opened":
        if not _has_label(issue, label):
            return ignored(f"opened without the {label!r} label")
    else:
        return ignored(f"issues.{context.action} needs nothing")
    if issue.get("pull_request"):
        return ignored("the trigger label on a pull request starts nothing")
    if issue.get("state") == "closed":
        return ignored("the issue is closed")
    repository = context.repository
    if not repository.accepts_tasks:
        return ignored(f"{repository} does not accept tasks")
    if not sender_can_write(context):
        if not getattr(settings, "CODEX_WEBHOOK_REPLY_TO_NON_WRITERS", True):
            return ignored(f"{context.sender} has no write access")
        # Keyed by the issue, not the delivery: labelling twice is one reply.
        reply_once(
            context,
            number,
            f"issue:{number}:not-authorized",
            NOT_AUTHORIZED.format(label=label),
        )
        return ignored(f"{context.sender} has no write access; replied once")
    title = (str(issue.get("title") or "").strip() or f"Issue #{number}")[
        :TITLE_MAX_LENGTH
    ]
    try:
        task, created = Task.objects.create_from_request(
            repository=repository,
            title=title,
            description=str(issue.get("body") or ""),
            created_by=CreatedBy.API,
            issue_number=number,
            idempotency_key=f"github:{repository.pk}:{number}",
            actor=context.actor,
            # Who asked never approves alone; a label asks for plan approval
            # (docs/gates.md).
            requester_login=context.sender,
            plan_approval_required=_has_label(issue, plan_label()),
        )
    except IdempotencyMismatch as exc:
        # The issue was edited since its task was created: the task stands.
        task, created = exc.task, False
    except ValidationError as exc:
        return ignored(f"the issue is not a valid request: {'; '.join(exc.messages)}")
    claim = IssueClaim.objects.claim(
        repository, number, task.task_id, title=title, by=context.actor
    )
    claimed = "claimed" if claim is not None else "not claimable now"
    verb = "created" if created else "already existed"
    return processed(f"task {task.task_id} {verb}; issue #{number} {claimed}")
