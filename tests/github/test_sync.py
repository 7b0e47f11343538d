"""The GitHub sync keeps the issue cache (spec 004) and the open agent
instances' pull requests current; an unchanged repository costs one request."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
import time_machine
from django.core.cache import cache
from responses import matchers

from codex.fleet.models import AgentInstance
from codex.github.models import GitHubIssue
from codex.github.sync import sync_repository, sync_state_key
from codex.repositories.jobs import sync_github_repositories
from integrations.github.sync import WINDOW_LIMIT
from tests.factories import make_repository
from tests.integrations.github.payloads import (
    API,
    REPO_API,
    issue,
    pull_request,
    pull_request_as_issue,
    rate_limited,
)

pytestmark = pytest.mark.django_db

ISSUES = f"{REPO_API}/issues"
FIRST = {"state": "all", "sort": "updated", "direction": "asc", "per_page": "100"}
ETAG = 'W/"b7e3f1a2c4d5e6f708192a3b4c5d6e7f"'
T0 = datetime(2025, 3, 1, 12, 0, 0, tzinfo=UTC)


def with_pr(repository, pr_number: int, issue_number: int = 1) -> AgentInstance:
    instance = AgentInstance.objects.start(
        type="coding",
        repository=repository,
        worktree_path=f"/tmp/worktrees/work-{issue_number}",
        branch_name=f"codex/issue-{issue_number}",
        issue_number=issue_number,
        by="test",
    )
    return instance.perform(
        "create_pr",
        by="test",
        pr_number=pr_number,
        pr_url=f"https://github.com/Codertocat/Hello-World/pull/{pr_number}",
    )


def first_window():
    return [
        issue(1, updated_at="2025-02-28T09:00:00Z", labels=["bug", "codex"]),
        issue(2, updated_at="2025-02-28T10:00:00Z", state="closed", title="Old"),
        pull_request_as_issue(
            3, updated_at="2025-02-28T11:00:00Z", state="closed", merged=True
        ),
        pull_request_as_issue(5, updated_at="2025-02-28T11:30:00Z"),
    ]


def test_first_sync_fills_the_cache_and_settles_pull_requests(github, repository):
    merged = with_pr(repository, 3, issue_number=1)
    closed = with_pr(repository, 4, issue_number=2)
    still_open = with_pr(repository, 5, issue_number=6)
    github.get(
        ISSUES,
        match=[matchers.query_param_matcher(FIRST)],
        json=first_window(),
        headers={"ETag": ETAG},
    )
    # No sync state yet: #4 is not in the window, so it is asked for directly.
    github.get(f"{REPO_API}/pulls/4", json=pull_request(4, state="closed"))

    with time_machine.travel(T0, tick=False):
        result = sync_repository(repository)

    assert result == {
        "repository": "Codertocat/Hello-World",
        "changed": True,
        "pages": 1,
        "issues": 2,
        "merged": [3],
        "closed": [4],
    }
    cached = {
        row.number: row for row in GitHubIssue.objects.filter(repository=repository)
    }
    assert sorted(cached) == [1, 2]  # pull requests are not cached as issues
    assert cached[1].labels == ["bug", "codex"]
    assert cached[2].state == "closed"
    assert cached[1].synced_at == T0
    for instance, status in [
        (merged, "pr_merged"),
        (closed, "pr_closed"),
        (still_open, "pr_created"),
    ]:
        instance.refresh_from_db()
        assert instance.status == status
    assert cache.get(sync_state_key(repository)) == {
        "since": None,
        "etag": ETAG,
        "synced_at": "2025-03-01T12:00:00Z",
    }


def test_an_unchanged_repository_costs_at_most_two_requests(github, repository):
    with_pr(repository, 5, issue_number=6)
    github.get(ISSUES, json=first_window(), headers={"ETag": ETAG})
    sync_repository(repository)
    before = len(github.calls)

    github.get(
        ISSUES,
        match=[
            matchers.query_param_matcher(FIRST),
            matchers.header_matcher({"If-None-Match": ETAG}),
        ],
        status=304,
        headers={"ETag": ETAG},
    )
    result = sync_repository(repository)

    assert len(github.calls) - before <= 2
    assert len(github.calls) - before == 1
    assert result["changed"] is False
    assert GitHubIssue.objects.filter(repository=repository).count() == 2


def test_a_changed_repository_updates_the_cache(github, repository):
    github.get(ISSUES, json=first_window(), headers={"ETag": ETAG})
    sync_repository(repository)
    new_etag = 'W/"0f0e0d0c0b0a09080706050403020100"'
    github.get(
        ISSUES,
        match=[matchers.header_matcher({"If-None-Match": ETAG})],
        json=[
            *first_window(),
            issue(
                1,
                updated_at="2025-03-01T08:00:00Z",
                state="closed",
                title="Spelling error in the README file (fixed)",
            ),
        ][1:],
        headers={"ETag": new_etag},
    )

    result = sync_repository(repository)

    assert (result["changed"], result["issues"]) == (True, 2)
    fixed = GitHubIssue.objects.get(repository=repository, number=1)
    assert (fixed.state, fixed.title) == (
        "closed",
        "Spelling error in the README file (fixed)",
    )
    assert cache.get(sync_state_key(repository))["etag"] == new_etag


def test_a_full_window_moves_the_cursor_to_githubs_newest_update(github, repository):
    many = [
        issue(n, updated_at=f"2025-02-{1 + n % 28:02d}T10:00:00Z")
        for n in range(1, WINDOW_LIMIT + 1)
    ]
    newest = max(item["updated_at"] for item in many)
    github.get(ISSUES, json=many, headers={"ETag": ETAG})
    sync_repository(repository)
    assert cache.get(sync_state_key(repository))["since"] == newest

    github.get(
        ISSUES,
        match=[matchers.query_param_matcher({**FIRST, "since": newest})],
        json=[issue(9, updated_at=newest)],
        headers={"ETag": ETAG},
    )
    sync_repository(repository)
    assert "If-None-Match" not in github.calls[-1].request.headers


def test_pages_are_followed(github, repository):
    # GitHub's Link header names pages without the port; PyGithub adds it.
    page_2 = (
        "https://api.github.com/repositories/1296269/issues"
        "?state=all&sort=updated&direction=asc&per_page=100&page=2"
    )
    github.get(
        ISSUES,
        match=[matchers.query_param_matcher(FIRST)],
        json=[issue(1, updated_at="2025-02-01T00:00:00Z")],
        headers={
            "ETag": ETAG,
            "Link": f'<{page_2}>; rel="next", <{page_2}>; rel="last"',
        },
    )
    github.get(
        f"{API}/repositories/1296269/issues",
        json=[issue(2, updated_at="2025-02-02T00:00:00Z")],
    )

    result = sync_repository(repository)

    assert (result["pages"], result["issues"]) == (2, 2)
    # Two pages: the window is past one page, so the cursor moves on.
    assert cache.get(sync_state_key(repository))["since"] == "2025-02-02T00:00:00Z"


def test_without_sync_state_the_cache_itself_is_the_cursor(github, repository):
    GitHubIssue.objects.upsert_from_api(
        repository, issue(1, updated_at="2025-02-20T10:00:00Z")
    )
    github.get(
        ISSUES,
        match=[
            matchers.query_param_matcher({**FIRST, "since": "2025-02-20T10:00:00Z"})
        ],
        json=[issue(1, updated_at="2025-02-20T10:00:00Z")],
    )
    assert sync_repository(repository)["changed"] is True


def test_the_job_syncs_every_github_repository_despite_one_failing(github, settings):
    broken = make_repository("https://github.com/Codertocat/Gone")
    working = make_repository("https://github.com/Codertocat/Hello-World")
    make_repository(f"file://{settings.BASE_DIR}/var/forge/local.git")  # not GitHub
    github.get(
        f"{API}/repos/Codertocat/Gone/issues",
        status=404,
        json={
            "message": "Not Found",
            "documentation_url": "https://docs.github.com/rest",
        },
    )
    github.get(ISSUES, json=[issue(1)], headers={"ETag": ETAG})

    results = sync_github_repositories()

    assert results["Codertocat/Gone"]["error"]["action"] == "manual_review"
    assert results["Codertocat/Hello-World"]["issues"] == 1
    assert GitHubIssue.objects.filter(repository=working).count() == 1
    assert not GitHubIssue.objects.filter(repository=broken).exists()
    assert len(results) == 2


def test_a_rate_limit_stops_the_round(github):
    make_repository("https://github.com/Codertocat/A")
    make_repository("https://github.com/Codertocat/B")
    github.get(
        f"{API}/repos/Codertocat/A/issues",
        status=403,
        json=rate_limited("primary"),
        headers={
            "x-ratelimit-remaining": "0",
            "x-ratelimit-reset": str(int(T0.timestamp()) + 600),
        },
    )
    with time_machine.travel(T0, tick=False):
        results = sync_github_repositories()

    assert results["Codertocat/A"]["error"]["retry_after"] == 600
    assert results["stopped"] == {"retry_after": 600}
    assert "Codertocat/B" not in results
    assert len(github.calls) == 1
