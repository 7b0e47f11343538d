"""Figure 6: GitHub sync requests for a 1,000-issue repository, counted at the
HTTP layer with `responses` in front of a small simulated GitHub (since filter,
ascending by update, 100 per page with Link headers, ETag / 304)."""

from __future__ import annotations

import copy
import hashlib
import json
import re
from datetime import UTC, datetime, timedelta
from urllib.parse import parse_qs, urlparse

from bench.common import figure

PER_PAGE = 100
URL = re.compile(
    r"https://api\.github\.com(:443)?/(repos/bench/sync|repositories/1296269)/issues"
)


def _simulator(items: list[dict]):
    def callback(request):
        query = {k: v[0] for k, v in parse_qs(urlparse(request.url).query).items()}
        since = query.get("since")
        page = int(query.get("page", "1"))
        window = [i for i in items if not since or i["updated_at"] >= since]
        etag = (
            'W/"'
            + hashlib.sha1(
                json.dumps(
                    [since, len(window), window[-1]["updated_at"] if window else ""]
                ).encode()
            ).hexdigest()
            + '"'
        )
        if page == 1 and request.headers.get("If-None-Match") == etag:
            return 304, {"ETag": etag}, ""
        chunk = window[(page - 1) * PER_PAGE : page * PER_PAGE]
        headers = {"ETag": etag}
        if page * PER_PAGE < len(window):
            next_url = (
                "https://api.github.com/repositories/1296269/issues?state=all&sort=updated"
                f"&direction=asc&per_page={PER_PAGE}&page={page + 1}"
                + (f"&since={since}" if since else "")
            )
            headers["Link"] = f'<{next_url}>; rel="next"'
        return 200, headers, json.dumps(chunk)

    return callback


def run(smoke: bool) -> list[dict]:
    import responses
    from django.core.cache import cache
    from django.test import override_settings

    from codex.github.sync import sync_repository, sync_state_key
    from codex.repositories.models import Repository
    from tests.configuration.factories import KEY_A
    from tests.integrations.github.payloads import issue

    count = 300 if smoke else 1000
    t0 = datetime(2025, 1, 1, tzinfo=UTC)
    template = issue(1)  # reads GitHub's payload file once
    items = []
    for n in range(1, count + 1):
        item = copy.deepcopy(template)
        stamp = (t0 + timedelta(minutes=n)).strftime("%Y-%m-%dT%H:%M:%SZ")
        item.update(
            number=n,
            updated_at=stamp,
            html_url=f"https://github.com/bench/sync/issues/{n}",
        )
        items.append(item)
    repository, _ = Repository.objects.get_or_create(
        url="https://github.com/bench/sync"
    )
    overrides = {
        "CODEX_GITHUB_SECONDS_BETWEEN_REQUESTS": None,
        "CODEX_GITHUB_SECONDS_BETWEEN_WRITES": None,
        "CODEX_GITHUB_RETRY_BACKOFF": 0,
        "CODEX_CREDENTIALS": {"github": ["ghp_benchTokenAAAAAAAAAAAAAAAAAAAAAAAAAAA"]},
        "GITHUB_APP_ID": "",
        "GITHUB_APP_PRIVATE_KEY": "",
        "GITHUB_APP_INSTALLATION_ID": "",
        "GITHUB_BASE_URL": "https://api.github.com",
        "CODEX_FERNET_KEYS": KEY_A,
    }
    cache.delete(sync_state_key(repository))
    calls = []
    with override_settings(**overrides), responses.RequestsMock() as mock:
        mock.add_callback(responses.GET, URL, callback=_simulator(items))
        for _ in range(3):
            before = len(mock.calls)
            result = sync_repository(repository)
            calls.append(
                (len(mock.calls) - before, result["changed"], result["issues"])
            )
    full, settle, unchanged = calls
    unchanged_worst = max(settle[0], unchanged[0])
    return [
        figure(
            "github_sync_full_requests",
            full[0],
            "requests",
            goal="<= 11 requests",
            meets=full[0] <= 11 and full[2] == count,
            notes=f"first sync of {count} issues: {full[2]} issues cached",
        ),
        figure(
            "github_sync_unchanged_requests",
            unchanged_worst,
            "requests",
            goal="<= 2 requests",
            meets=unchanged_worst <= 2,
            notes=f"worst of the two syncs after the full one (no change upstream): "
            f"{settle[0]} (cursor moved, changed={settle[1]}), then {unchanged[0]} "
            f"(changed={unchanged[1]}, 304)",
        ),
    ]
