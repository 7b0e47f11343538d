"""Posting the reviewer's comments on a GitHub pull request: one COMMENT
review, found again by its marker, failures classified."""

from __future__ import annotations

import json

import pytest
from responses import matchers

from codex.core.errors import Action, ClassifiedFailure
from integrations.github.forge import GitHubForge
from tests.integrations.github.payloads import API, REPO_API, review

pytestmark = pytest.mark.django_db

MARKER = "<!-- codex-review FEAT-1 cycle 1 -->"


def test_post_review_is_one_comment_review(github, repository):
    github.post(
        f"{REPO_API}/pulls/2/reviews",
        json=review(80, f"{MARKER}\nLooks risky"),
        match=[
            matchers.json_params_matcher(
                {"body": f"{MARKER}\nLooks risky", "event": "COMMENT"}
            )
        ],
    )

    posted = GitHubForge(repository).post_review(2, f"{MARKER}\nLooks risky")

    assert posted == {
        "id": 80,
        "url": "https://github.com/Codertocat/Hello-World/pull/2#pullrequestreview-80",
        "body": f"{MARKER}\nLooks risky",
    }
    assert len(github.calls) == 1


def test_find_review_reads_every_page_and_only_our_own(github, repository):
    next_page = f"{REPO_API}/pulls/2/reviews?per_page=100&page=2"
    github.get(
        f"{REPO_API}/pulls/2/reviews",
        json=[
            review(1, f"copied {MARKER}", login="Codertocat"),
            review(2, None, login="octo-bot"),
        ],
        headers={"Link": f'<{next_page.replace(":443", "")}>; rel="next"'},
        match=[matchers.query_param_matcher({"per_page": "100"})],
    )
    github.get(
        f"{REPO_API}/pulls/2/reviews",
        json=[review(3, f"{MARKER}\nours", login="octo-bot")],
        match=[matchers.query_param_matcher({"per_page": "100", "page": "2"})],
    )
    github.get(f"{API}/user", json={"login": "octo-bot", "id": 1, "type": "User"})

    found = GitHubForge(repository).find_review(2, MARKER)

    assert found is not None and found["id"] == 3


def test_a_refused_review_needs_a_person(github, repository):
    github.post(
        f"{REPO_API}/pulls/2/reviews",
        status=422,
        json={
            "message": "Unprocessable Entity",
            "errors": ["Review cannot be submitted on a locked pull request"],
            "documentation_url": "https://docs.github.com/rest",
        },
    )
    with pytest.raises(ClassifiedFailure) as caught:
        GitHubForge(repository).post_review(2, "x")
    assert caught.value.error.action == Action.MANUAL_REVIEW
    assert caught.value.error.code == 422


def test_a_rate_limited_review_waits(github, repository):
    github.post(
        f"{REPO_API}/pulls/2/reviews",
        status=403,
        json={"message": "You have exceeded a secondary rate limit."},
        headers={"retry-after": "60"},
    )
    with pytest.raises(ClassifiedFailure) as caught:
        GitHubForge(repository).post_review(2, "x")
    assert caught.value.error.action == Action.WAIT_RETRY
    assert caught.value.error.retry_after == 60
    assert json.loads(github.calls[0].request.body)["event"] == "COMMENT"
