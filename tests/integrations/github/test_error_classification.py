"""Every GitHub failure becomes the one classified error (spec 000 §4), rate
limits are never slept on, and only reads are retried."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
import requests
import time_machine

from codex.core.errors import Action, ClassifiedFailure
from codex.core.store.side_effects import SideEffect, perform_once
from integrations.github.client import GithubException, classified, github_errors
from integrations.github.forge import GitHubForge
from tests.integrations.github.payloads import (
    GRAPHQL,
    REPO_API,
    pull_request,
    rate_limited,
)

pytestmark = pytest.mark.django_db

T0 = datetime(2025, 3, 1, 12, 0, 0, tzinfo=UTC)
NOT_FOUND = {
    "message": "Not Found",
    "documentation_url": "https://docs.github.com/rest/pulls/pulls#get-a-pull-request",
    "status": "404",
}


def failure_of(call) -> ClassifiedFailure:
    with pytest.raises(ClassifiedFailure) as caught:
        call()
    return caught.value


def test_primary_rate_limit_waits_until_the_reset(github, repository):
    reset = int(T0.timestamp()) + 1234
    github.get(
        f"{REPO_API}/pulls/2",
        json=rate_limited("primary"),
        status=403,
        headers={
            "x-ratelimit-limit": "5000",
            "x-ratelimit-remaining": "0",
            "x-ratelimit-used": "5000",
            "x-ratelimit-reset": str(reset),
            "x-ratelimit-resource": "core",
        },
    )
    with time_machine.travel(T0, tick=False):
        failure = failure_of(lambda: GitHubForge(repository).get_pull_request(2))

    assert failure.action is Action.WAIT_RETRY
    assert failure.code == 403
    assert failure.retry_after == 1234
    assert failure.recoverable is True
    assert len(github.calls) == 1  # not retried, not slept on


def test_secondary_rate_limit_waits_for_retry_after(github, repository):
    github.get(
        f"{REPO_API}/pulls/2",
        json=rate_limited("secondary"),
        status=403,
        headers={"retry-after": "30", "x-ratelimit-remaining": "4987"},
    )
    failure = failure_of(lambda: GitHubForge(repository).get_pull_request(2))

    assert (failure.action, failure.retry_after) == (Action.WAIT_RETRY, 30)
    assert len(github.calls) == 1


def test_429_waits(github, repository):
    github.get(
        f"{REPO_API}/pulls/2",
        json={"message": "Too Many Requests"},
        status=429,
        headers={"retry-after": "60"},
    )
    failure = failure_of(lambda: GitHubForge(repository).get_pull_request(2))

    assert (failure.code, failure.action, failure.retry_after) == (
        429,
        Action.WAIT_RETRY,
        60,
    )
    assert len(github.calls) == 1


def test_graphql_rate_limit_waits(github, repository):
    github.get(f"{REPO_API}/pulls/2", json=pull_request(2, draft=True))
    github.post(
        GRAPHQL,
        json={
            "errors": [
                {
                    "type": "RATE_LIMITED",
                    "message": "API rate limit exceeded for user ID 1.",
                }
            ]
        },
        headers={"x-ratelimit-remaining": "0", "x-ratelimit-reset": "1740834000"},
    )
    with time_machine.travel(T0, tick=False):
        failure = failure_of(lambda: GitHubForge(repository).mark_ready(2))

    assert failure.action is Action.WAIT_RETRY
    assert failure.retry_after == 1740834000 - int(T0.timestamp())


def test_404_needs_a_person(github, repository):
    github.get(f"{REPO_API}/pulls/2", json=NOT_FOUND, status=404)
    failure = failure_of(lambda: GitHubForge(repository).get_pull_request(2))

    assert (failure.code, failure.action) == (404, Action.MANUAL_REVIEW)
    assert failure.recoverable is False
    assert "Not Found" in failure.message
    assert isinstance(failure.__cause__, GithubException)


def test_401_rotates_the_token(github, repository):
    github.get(
        f"{REPO_API}/pulls/2",
        json={
            "message": "Bad credentials",
            "documentation_url": "https://docs.github.com/rest",
        },
        status=401,
    )
    failure = failure_of(lambda: GitHubForge(repository).get_pull_request(2))

    assert (failure.code, failure.action) == (401, Action.ROTATE_TOKEN)


def test_a_plain_403_needs_a_person(github, repository):
    github.post(
        f"{REPO_API}/issues/1/comments",
        json={
            "message": "Resource not accessible by integration",
            "documentation_url": "https://docs.github.com/rest",
        },
        status=403,
        headers={"x-ratelimit-remaining": "4999"},
    )
    failure = failure_of(lambda: GitHubForge(repository).comment(1, "hello"))
    assert failure.action is Action.MANUAL_REVIEW


def test_502_on_a_read_is_retried_then_succeeds(github, repository):
    github.get(f"{REPO_API}/pulls/2", body="<html>Bad Gateway</html>", status=502)
    github.get(f"{REPO_API}/pulls/2", json=pull_request(2))

    pr = GitHubForge(repository).get_pull_request(2)

    assert pr["number"] == 2
    assert len(github.calls) == 2


def test_502_on_every_read_attempt_waits(github, repository):
    for _ in range(4):  # the first try and three retries
        github.get(f"{REPO_API}/pulls/2", body="Bad Gateway", status=502)

    failure = failure_of(lambda: GitHubForge(repository).get_pull_request(2))
    assert (failure.code, failure.action) == (502, Action.WAIT_RETRY)
    assert len(github.calls) == 4


def test_502_on_create_pull_request_is_not_retried(github, repository):
    github.post(f"{REPO_API}/pulls", body="Bad Gateway", status=502)

    failure = failure_of(
        lambda: GitHubForge(repository).create_pull_request(
            head="changes", base="master", title="Update README", body="..."
        )
    )

    assert (failure.code, failure.action) == (502, Action.WAIT_RETRY)
    assert len(github.calls) == 1


def test_a_retried_step_after_a_lost_502_makes_no_second_pull_request(
    github, repository, transactional_db
):
    """GitHub created the pull request but the answer was a 502: the step is
    retried, perform_once looks first, finds it, and does not POST again."""
    forge = GitHubForge(repository)
    key = "github:Codertocat/Hello-World:pr:create:changes"

    def create() -> dict:
        return dict(
            forge.create_pull_request(
                head="changes", base="master", title="Update README", body="..."
            )
        )

    def lookup() -> dict | None:
        found = forge.find_pull_request("changes")
        return dict(found) if found else None

    github.post(f"{REPO_API}/pulls", body="Bad Gateway", status=502)
    with pytest.raises(ClassifiedFailure):
        perform_once(key, create, lookup=lookup)

    github.get(f"{REPO_API}/pulls", json=[pull_request(2)])
    result = perform_once(key, create, lookup=lookup)

    assert result["number"] == 2
    posts = [call for call in github.calls if call.request.method == "POST"]
    assert len(posts) == 1
    assert "head=Codertocat%3Achanges" in github.calls[1].request.url
    assert SideEffect.objects.get(key=key).found_by_lookup is True


def test_network_errors_wait_and_retry():
    failure = classified(requests.ConnectionError("connection reset by peer"))
    assert (failure.code, failure.action) == (0, Action.WAIT_RETRY)

    failure = classified(requests.ReadTimeout("read timed out"))
    assert failure.action is Action.WAIT_RETRY
    assert "Timed out" in failure.message


def test_github_errors_is_a_context_manager_and_a_decorator():
    @github_errors
    def broken() -> None:
        raise GithubException(500, {"message": "Server Error"}, {})

    with pytest.raises(ClassifiedFailure) as caught:
        broken()
    assert caught.value.action is Action.WAIT_RETRY

    with pytest.raises(ValueError), github_errors:
        raise ValueError("a bug of ours is not a GitHub failure")
