"""Keeping the GitHub issue cache (docs/domain/configuration.md#forge-cache) and
pull request states current, at the lowest cost in API calls.

One conditional request answers "did anything change?": the issues list of the
repository (which includes pull requests) updated since a cursor, sorted by
update, sent with the ETag of the last identical request. GitHub answers 304
Not Modified when nothing changed, and a 304 does not count against the rate
limit. So an unchanged repository costs one request per sync.

The cursor (`since`) is kept still while the window it opens is small (less
than WINDOW_LIMIT items on one page): the URL then stays the same and its ETag
stays usable. When the window grows past that, the cursor moves to the newest
`updated_at` seen (GitHub's clock, not ours, so no skew loses an update) and
the next sync starts a new window.

The list carries each pull request's state and `merged_at`, so open agent
instances (pr_created) learn about merges and closes from it without a request
per pull request. Only when the sync state is missing (first sync, cache
flushed) are their pull requests asked for one by one, since the window may
not reach back to their last change.

The sync state (cursor, ETag, last sync time) lives in Django's cache: losing
it costs one larger request, never correctness. Webhooks keep the cache fresh
in between; `upsert_from_api` never moves a cached issue backwards.
"""

from __future__ import annotations

import logging
import re
from datetime import UTC
from typing import TYPE_CHECKING, Any

from django.core.cache import cache
from django.db.models import Max
from django.utils import timezone
from django_fsm import TransitionNotAllowed
from github import Github

from codex.core.models import VersionConflict
from codex.fleet.models import AgentInstance
from codex.fleet.models.choices import InstanceStatus
from codex.github.models import GitHubIssue
from integrations.github.client import PER_PAGE, github_client, github_errors

if TYPE_CHECKING:
    from codex.repositories.models import Repository

logger = logging.getLogger(__name__)

SYNC_ACTOR = "github-sync"
# Items a window may hold before the cursor moves on (below one page of 100,
# so an unchanged window is always a single request).
WINDOW_LIMIT = 50
_NEXT_LINK = re.compile(r'<([^>]+)>;\s*rel="next"')


def sync_state_key(repository: Repository) -> str:
    """The Django cache key of a repository's sync state."""
    return f"codex:github:issue-sync:{repository.pk}"


def _iso(moment: Any) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _fallback_since(repository: Repository) -> str | None:
    # Without a stored cursor, the newest cached issue says how far the cache
    # is already current (GitHub's own timestamp).
    newest = GitHubIssue.objects.filter(repository=repository).aggregate(
        newest=Max("updated_at")
    )["newest"]
    return _iso(newest) if newest else None


def _fetch_window(
    client: Github, repository: Repository, since: str | None, etag: str | None
) -> tuple[list[dict[str, Any]] | None, str | None, int]:
    """(items or None when unchanged, the first page's ETag, pages fetched).

    This is `repo.get_issues(state="all", since=..., sort="updated")` by hand:
    PyGithub's paginated list cannot send If-None-Match.
    """
    parameters: dict[str, Any] = {
        "state": "all",
        "sort": "updated",
        # Oldest first: an issue updated while we page moves to the end
        # instead of shifting the pages still to come.
        "direction": "asc",
        "per_page": PER_PAGE,
    }
    if since:
        parameters["since"] = since
    headers = {"If-None-Match": etag} if etag else None
    url: str | None = f"/repos/{repository.full_name}/issues"
    items: list[dict[str, Any]] = []
    first_etag = None
    pages = 0
    while url:
        response_headers, data = client.requester.requestJsonAndCheck(
            "GET", url, parameters=parameters if pages == 0 else None, headers=headers
        )
        pages += 1
        if pages == 1:
            if data is None:  # 304 Not Modified
                return None, etag, pages
            first_etag = response_headers.get("etag")
            headers = None
        items.extend(data)
        match = _NEXT_LINK.search(response_headers.get("link", ""))
        url = match.group(1) if match else None
    return items, first_etag, pages


def _pull_request_outcome(state: str, merged: bool) -> str | None:
    """The instance transition a pull request's state calls for, if any."""
    if state != "closed":
        return None
    return "merged" if merged else "closed"


def _apply_outcome(instance: AgentInstance, outcome: str) -> bool:
    try:
        instance.perform(
            outcome, by=SYNC_ACTOR, reason=f"pull request {outcome} (GitHub sync)"
        )
    except (TransitionNotAllowed, VersionConflict):
        # A webhook or another sync got there first: nothing left to do.
        logger.info("instance %s already moved on", instance)
        return False
    return True


def _reconcile_pull_requests(
    client: Github,
    repository: Repository,
    seen: dict[int, dict[str, Any]],
    *,
    ask_each: bool,
) -> dict[str, list[int]]:
    moved: dict[str, list[int]] = {"merged": [], "closed": []}
    waiting = AgentInstance.objects.filter(
        repository=repository,
        status=InstanceStatus.PR_CREATED,
        pr_number__isnull=False,
    )
    for instance in waiting:
        item = seen.get(instance.pr_number)
        if item is not None:
            merged = bool((item.get("pull_request") or {}).get("merged_at"))
            outcome = _pull_request_outcome(item["state"], merged)
        elif ask_each:
            _, pull = client.requester.requestJsonAndCheck(
                "GET", f"/repos/{repository.full_name}/pulls/{instance.pr_number}"
            )
            outcome = _pull_request_outcome(pull["state"], bool(pull.get("merged")))
        else:
            continue  # unchanged since the cursor, so still open
        if outcome and _apply_outcome(instance, outcome):
            moved[outcome].append(instance.pr_number)
    return moved


def sync_repository(
    repository: Repository, *, client: Github | None = None
) -> dict[str, Any]:
    """Bring the issue cache and the pull requests of open agent instances up
    to date with GitHub; returns what happened (JSON-ready).

    Raises ClassifiedFailure (rate limit: wait_retry with the reset time).
    The sync state is only saved after everything was applied, so a failed
    sync is simply done again.
    """
    client = client or github_client(repository)
    key = sync_state_key(repository)
    state = cache.get(key)
    since = state["since"] if state else _fallback_since(repository)
    etag = state.get("etag") if state else None

    with github_errors:
        items, new_etag, pages = _fetch_window(client, repository, since, etag)
        if items is None:
            state["synced_at"] = _iso(timezone.now())
            cache.set(key, state, None)
            return {
                "repository": repository.full_name,
                "changed": False,
                "pages": pages,
                "issues": 0,
                "merged": [],
                "closed": [],
            }

        issues = 0
        pulls: dict[int, dict[str, Any]] = {}
        for item in items:
            if item.get("pull_request"):
                pulls[int(item["number"])] = item
            elif GitHubIssue.objects.upsert_from_api(repository, item) is not None:
                issues += 1
        moved = _reconcile_pull_requests(
            client, repository, pulls, ask_each=state is None
        )

    if pages > 1 or len(items) >= WINDOW_LIMIT:
        # Start a new window at the newest change seen; its ETag is unknown.
        newest = max((item["updated_at"] for item in items), default=since)
        state = {"since": newest, "etag": None}
    else:
        state = {"since": since, "etag": new_etag}
    state["synced_at"] = _iso(timezone.now())
    cache.set(key, state, None)
    return {
        "repository": repository.full_name,
        "changed": True,
        "pages": pages,
        "issues": issues,
        **moved,
    }
