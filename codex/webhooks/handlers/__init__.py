"""Turning a stored delivery into what it means for Codex.

`dispatch(delivery)` applies the rules every event shares, then calls the
event's handler, which returns a `Result` (outcome and detail):

- Codex's own bot (CODEX_BOT_LOGIN) is never listened to: what it did, Codex
  did, and reacting to it would loop.
- Other bots (sender type "Bot") are ignored for events that carry a person's
  intent: issues, comments (commands), reviews, board moves. One exception:
  comments carrying the "🤖 Child" marker (docs/domain/fan-out.md#child-reports),
  because children run by other tools report as bots (github-actions[bot], say).
- Events that report facts about GitHub's state are applied whoever caused
  them: check results (CI apps are bots, and Codex's own pushes start them), a
  pull request merged or closed (a merge bot may merge), installations.
- Only repositories Codex knows are acted on (html_url, normalized); others
  end as "unknown repository". Installation and board events carry no
  repository and are handled without one.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

from django.conf import settings
from django.core.exceptions import ValidationError

from codex.repositories.intake import intake_repository_url
from codex.repositories.models import Repository, normalize_repository_url
from codex.webhooks.handlers.common import Context, Result
from codex.webhooks.models import Outcome, WebhookDelivery
from integrations.github.origin import GitHubNotConfigured

Handler = Callable[[Context], Result]

# Events that report facts rather than people's intent (see the docstring).
FACT_EVENTS = frozenset(
    {
        "pull_request",
        "check_suite",
        "check_run",
        "installation",
        "installation_repositories",
    }
)
# Events that are not about one repository.
REPOSITORY_FREE_EVENTS = frozenset(
    {"installation", "installation_repositories", "projects_v2_item"}
)


def handlers() -> dict[str, Handler]:
    """The handler of each event Codex acts on."""
    from codex.webhooks.handlers import (
        board,
        checks,
        comments,
        installations,
        issues,
        pull_requests,
    )

    return {
        "issues": issues.handle,
        "issue_comment": comments.handle,
        "pull_request": pull_requests.handle_pull_request,
        "pull_request_review": pull_requests.handle_review,
        "check_suite": checks.handle,
        "check_run": checks.handle,
        "projects_v2_item": board.handle,
        "installation": installations.handle,
        "installation_repositories": installations.handle,
    }


def find_repository(payload: dict) -> Repository | None:
    """The known repository a payload is about, by its html_url, or None."""
    repository = payload.get("repository")
    url = repository.get("html_url") if isinstance(repository, dict) else None
    if not isinstance(url, str):
        return None
    try:
        canonical = normalize_repository_url(url)
    except ValidationError:
        return None
    candidates = [canonical]
    if canonical.startswith("http://"):
        # Some payloads (a transferred issue) say http://; Codex stores https.
        candidates.append("https://" + canonical.removeprefix("http://"))
    # Intake stores the owner in lowercase; GitHub's html_url keeps its case.
    # A URL intake refuses (a local one), or no usable GitHub configured,
    # leaves the exact URL as the only candidate.
    with contextlib.suppress(ValidationError, GitHubNotConfigured):
        candidates.append(intake_repository_url(candidates[-1]))
    return Repository.objects.filter(url__in=candidates).first()


def is_own_bot(login: str) -> bool:
    """Whether `login` is Codex's own GitHub identity."""
    return login.casefold() == settings.CODEX_BOT_LOGIN.casefold()


def dispatch(delivery: WebhookDelivery) -> Result:
    """Process one delivery; returns what became of it. May raise: the job
    stores the error on the delivery."""
    handler = handlers().get(delivery.event)
    if handler is None:
        return Result(Outcome.IGNORED, f"Codex does not act on {delivery.event}")
    payload = delivery.payload
    sender = payload.get("sender") if isinstance(payload.get("sender"), dict) else {}
    login = str(sender.get("login") or "")
    if is_own_bot(login):
        return Result(Outcome.IGNORED, f"sent by Codex's own bot {login}")
    is_bot = sender.get("type") == "Bot"
    repository = None
    if delivery.event not in REPOSITORY_FREE_EVENTS:
        repository = find_repository(payload)
        if repository is None:
            return Result(Outcome.UNKNOWN_REPOSITORY, "not a repository Codex knows")
        if delivery.repository_id != repository.pk:
            WebhookDelivery.objects.filter(pk=delivery.pk).update(repository=repository)
    context = Context(
        delivery=delivery,
        payload=payload,
        repository=repository,
        sender=login,
        sender_is_bot=is_bot,
    )
    if is_bot and delivery.event not in FACT_EVENTS and not _is_child_report(context):
        return Result(Outcome.IGNORED, f"sent by the bot {login}")
    return handler(context)


def _is_child_report(context: Context) -> bool:
    from codex.children.parsing import MARKER

    comment = context.payload.get("comment")
    body = comment.get("body") if isinstance(comment, dict) else None
    return (
        context.delivery.event == "issue_comment"
        and isinstance(body, str)
        and MARKER in body
    )
