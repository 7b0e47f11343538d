"""What changed on GitHub since the last sync, at the lowest cost in API calls
(the issue cache it feeds: docs/domain/configuration.md#forge-cache; the
caller keeps the cache and the sync state: codex.github.sync).

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

The list carries each pull request's state and `merged_at`, so the caller
learns about merges and closes from it without a request per pull request;
`pull_request_state` asks for one when the window cannot say.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.utils import timezone
from github import Github

from integrations.github.client import PER_PAGE, github_client, github_errors

# Items a window may hold before the cursor moves on (below one page of 100,
# so an unchanged window is always a single request).
WINDOW_LIMIT = 50
_NEXT_LINK = re.compile(r'<([^>]+)>;\s*rel="next"')


def iso(moment: datetime) -> str:
    """GitHub's timestamp format (UTC, whole seconds)."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class Changes:
    """What a sync window found.

    `items` are the issues and pull requests (GitHub's issue payloads) updated
    since the cursor, or None when nothing changed (304). `state` is the sync
    state to keep once they are applied (cursor, ETag, sync time: JSON-ready);
    `pages` how many pages were fetched.
    """

    items: list[dict[str, Any]] | None
    state: dict[str, Any]
    pages: int


def _fetch_window(
    client: Github, full_name: str, since: str | None, etag: str | None
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
    url: str | None = f"/repos/{full_name}/issues"
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


def fetch_changes(
    full_name: str,
    state: dict[str, Any] | None,
    *,
    since: str | None = None,
    client: Github | None = None,
) -> Changes:
    """The issues and pull requests of `full_name` ("owner/name") changed since
    the last sync, whose kept `state` is given (None: none kept, and `since`,
    if any, is how far the caller's cache is already current).

    Raises ClassifiedFailure (rate limit: wait_retry with the reset time).
    """
    client = client or github_client()
    since = state["since"] if state else since
    etag = state.get("etag") if state else None
    with github_errors:
        items, new_etag, pages = _fetch_window(client, full_name, since, etag)
    now = iso(timezone.now())
    if items is None:
        return Changes(
            items=None, state={**(state or {}), "synced_at": now}, pages=pages
        )
    if pages > 1 or len(items) >= WINDOW_LIMIT:
        # Start a new window at the newest change seen; its ETag is unknown.
        newest = max((item["updated_at"] for item in items), default=since)
        next_state = {"since": newest, "etag": None}
    else:
        next_state = {"since": since, "etag": new_etag}
    return Changes(items=items, state={**next_state, "synced_at": now}, pages=pages)


def pull_request_state(
    full_name: str, number: int, *, client: Github | None = None
) -> tuple[str, bool]:
    """(state, merged) of pull request `number` of `full_name` (one GET)."""
    client = client or github_client()
    with github_errors:
        _, pull = client.requester.requestJsonAndCheck(
            "GET", f"/repos/{full_name}/pulls/{number}"
        )
    return pull["state"], bool(pull.get("merged"))
