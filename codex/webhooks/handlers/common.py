"""What handlers share: their input, their result, and lookups they all need."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import Q

from codex.core.store import perform_once
from codex.repositories import forge as forge_module
from codex.repositories.models import Repository
from codex.tasks.models import Task
from codex.webhooks.models import Outcome, WebhookDelivery


@dataclass(frozen=True)
class Context:
    """One delivery being processed, with what `dispatch` resolved."""

    delivery: WebhookDelivery
    payload: dict[str, Any]
    repository: Repository | None
    sender: str
    sender_is_bot: bool = False

    @property
    def actor(self) -> str:
        """How the event log names whoever caused the event."""
        return f"github:{self.sender or 'unknown'}"

    @property
    def action(self) -> str:
        """The payload's action ("" when there is none)."""
        return self.delivery.action


@dataclass(frozen=True)
class Result:
    """What processing made of a delivery: an Outcome and a sentence."""

    outcome: str
    detail: str = ""


def processed(detail: str) -> Result:
    """The delivery changed something (or was recorded) as it should."""
    return Result(Outcome.PROCESSED, detail)


def ignored(detail: str) -> Result:
    """The delivery needs nothing from Codex."""
    return Result(Outcome.IGNORED, detail)


def deferred(detail: str) -> Result:
    """The task was busy; the delivery is left to be processed again later."""
    return Result(Outcome.DEFERRED, detail)


def obj(value: Any) -> dict[str, Any]:
    """`value` if it is a JSON object, else an empty one (payloads vary)."""
    return value if isinstance(value, dict) else {}


def get_forge(repository: Repository):
    """The repository's forge, looked up at call time so tests can swap it."""
    return forge_module.get_forge(repository)


def sender_can_write(context: Context) -> bool:
    """Whether the sender has write access (the forge caches the answer)."""
    if not context.sender or context.repository is None:
        return False
    return bool(get_forge(context.repository).user_can_write(context.sender))


def reply_once(
    context: Context, issue_number: int, key: str, body: str, *, task=None
) -> dict[str, Any]:
    """Comment on an issue or pull request at most once for `key`, however often
    the delivery is processed: the comment carries a hidden marker that
    `find_comment` looks for if an earlier attempt did not finish."""
    repository = context.repository
    marker = f"<!-- codex:{key} -->"
    forge = get_forge(repository)
    return perform_once(
        f"github:{repository.full_name}:{key}",
        lambda: dict(forge.comment(issue_number, f"{body}\n\n{marker}")),
        lookup=lambda: _as_dict(forge.find_comment(issue_number, marker)),
        task=task,
        kind="github",
    )


def _as_dict(found: Any) -> dict[str, Any] | None:
    return dict(found) if found is not None else None


def task_for_pull_request(
    repository: Repository, *, html_url: str = "", head: str = ""
) -> Task | None:
    """The task a pull request belongs to: by its URL, else by its branch;
    the newest when several match (an earlier task may have used the branch)."""
    condition = Q()
    if html_url:
        condition |= Q(pr_url=html_url)
    if head:
        condition |= Q(branch=head)
    if not condition:
        return None
    return (
        Task.objects.filter(repository=repository)
        .filter(condition)
        .order_by("-created_at", "-id")
        .first()
    )


def task_for_issue(repository: Repository, issue: dict[str, Any]) -> Task | None:
    """The task an issue or pull-request conversation belongs to."""
    pull_request = obj(issue.get("pull_request"))
    if pull_request:
        return task_for_pull_request(
            repository, html_url=str(pull_request.get("html_url") or "")
        )
    number = issue.get("number")
    if not isinstance(number, int):
        return None
    return (
        Task.objects.filter(repository=repository, issue_number=number)
        .order_by("-created_at", "-id")
        .first()
    )
