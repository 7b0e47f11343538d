"""Keeping the GitHub issue cache (docs/domain/configuration.md#forge-cache)
and the pull requests of open agent instances current: what changed comes
from integrations.github.sync, this module applies it.

The sync state (cursor, ETag, last sync time) lives in Django's cache: losing
it costs one larger request, never correctness. Without it (first sync, cache
flushed) the newest cached issue says how far the cache is current, and the
pull requests of open instances are asked for one by one, since the window
may not reach back to their last change. Webhooks keep the cache fresh in
between; `upsert_from_api` never moves a cached issue backwards.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from django.core.cache import cache
from django.db.models import Max

from codex.github.hooks import pull_request_handlers
from codex.github.models import GitHubIssue
from integrations.github.sync import fetch_changes, iso

if TYPE_CHECKING:
    from github import Github

    from codex.repositories.models import Repository

logger = logging.getLogger(__name__)


def sync_state_key(repository: Repository) -> str:
    """The Django cache key of a repository's sync state."""
    return f"codex:github:issue-sync:{repository.pk}"


def _cached_until(repository: Repository) -> str | None:
    # The newest cached issue's own (GitHub's) timestamp.
    newest = GitHubIssue.objects.filter(repository=repository).aggregate(
        newest=Max("updated_at")
    )["newest"]
    return iso(newest) if newest else None


def sync_repository(
    repository: Repository, *, client: Github | None = None
) -> dict[str, Any]:
    """Bring the issue cache and the pull requests of open agent instances up
    to date with GitHub; returns what happened (JSON-ready).

    Raises ClassifiedFailure (rate limit: wait_retry with the reset time).
    The sync state is only saved after everything was applied, so a failed
    sync is simply done again.
    """
    key = sync_state_key(repository)
    state = cache.get(key)
    changes = fetch_changes(
        repository.full_name,
        state,
        since=None if state else _cached_until(repository),
        client=client,
    )
    result: dict[str, Any] = {
        "repository": repository.full_name,
        "changed": changes.items is not None,
        "pages": changes.pages,
        "issues": 0,
        "merged": [],
        "closed": [],
    }
    if changes.items is not None:
        pulls: dict[int, dict[str, Any]] = {}
        for item in changes.items:
            if item.get("pull_request"):
                pulls[int(item["number"])] = item
            elif GitHubIssue.objects.upsert_from_api(repository, item) is not None:
                result["issues"] += 1
        for handler in pull_request_handlers():
            result.update(
                handler(repository, pulls, ask_each=state is None, client=client)
            )
    cache.set(key, changes.state, None)
    return result
