"""GitHubForge: the Forge protocol on GitHub, against GitHub's response shapes."""

from __future__ import annotations

import base64
import json

import pytest
from responses import matchers

from codex.core.errors import Action, ClassifiedFailure
from codex.github.models import GitHubToken
from codex.repositories.forge import Forge, get_forge
from integrations.github.forge import GitHubForge
from tests.integrations.github.conftest import TOKENS
from tests.integrations.github.payloads import (
    API,
    GRAPHQL,
    HEAD_SHA,
    REPO_API,
    check_runs,
    combined_status,
    comment,
    pull_request,
)

pytestmark = pytest.mark.django_db

NO_STATUSES = combined_status("pending", [])  # GitHub's answer when none exist


def body_of(call) -> dict:
    return json.loads(call.request.body)


def test_get_forge_picks_github_and_it_satisfies_the_protocol(repository):
    forge = get_forge(repository)
    assert isinstance(forge, GitHubForge)
    missing = [
        name
        for name in dir(Forge)
        if not name.startswith("_") and not callable(getattr(forge, name, None))
    ]
    assert missing == []


def test_remote_url_and_git_credentials_keep_the_token_off_the_command_line(
    repository,
):
    forge = GitHubForge(repository)
    assert forge.remote_url() == "https://github.com/Codertocat/Hello-World.git"

    env = forge.git_credentials()
    assert env["GIT_CONFIG_COUNT"] == "1"
    assert env["GIT_CONFIG_KEY_0"] == "http.https://github.com/.extraheader"
    scheme, encoded = env["GIT_CONFIG_VALUE_0"].removeprefix("Authorization: ").split()
    assert scheme == "basic"
    assert base64.b64decode(encoded).decode() == f"x-access-token:{TOKENS[0]}"
    assert TOKENS[0] not in forge.remote_url()


def test_find_pull_request_prefers_the_open_one(github, repository):
    github.get(
        f"{REPO_API}/pulls",
        match=[
            matchers.query_param_matcher(
                {"head": "Codertocat:changes", "state": "all", "per_page": "100"}
            )
        ],
        json=[
            pull_request(1, state="closed"),
            pull_request(2, merged=True),
            pull_request(3),
        ],
    )
    found = GitHubForge(repository).find_pull_request("changes")

    assert found == {
        "number": 3,
        "url": "https://github.com/Codertocat/Hello-World/pull/3",
        "head": "changes",
        "base": "master",
        "head_sha": HEAD_SHA,
        "state": "open",
        "draft": False,
        "title": "Update the README with new information.",
    }
    assert len(github.calls) == 1  # no request per pull request


def test_find_pull_request_returns_a_merged_one_but_not_a_closed_one(
    github, repository
):
    github.get(f"{REPO_API}/pulls", json=[pull_request(2, merged=True)])
    github.get(f"{REPO_API}/pulls", json=[pull_request(1, state="closed")])
    github.get(f"{REPO_API}/pulls", json=[])
    forge = GitHubForge(repository)

    assert forge.find_pull_request("changes")["state"] == "merged"
    assert forge.find_pull_request("changes") is None
    assert forge.find_pull_request("changes") is None


def test_find_before_create(github, repository):
    forge = GitHubForge(repository)
    github.get(f"{REPO_API}/pulls", json=[])
    github.post(f"{REPO_API}/pulls", json=pull_request(2, draft=True), status=201)

    assert forge.find_pull_request("changes") is None
    created = forge.create_pull_request(
        head="changes",
        base="master",
        title="Update README",
        body="Closes #1",
        draft=True,
    )

    assert created["number"] == 2 and created["draft"] is True
    assert body_of(github.calls[1]) == {
        "base": "master",
        "head": "changes",
        "title": "Update README",
        "body": "Closes #1",
        "draft": True,
    }


def test_a_second_create_is_refused_as_422(github, repository):
    github.post(
        f"{REPO_API}/pulls",
        status=422,
        json={
            "message": "Validation Failed",
            "errors": [
                {
                    "resource": "PullRequest",
                    "code": "custom",
                    "message": "A pull request already exists for Codertocat:changes.",
                }
            ],
            "documentation_url": "https://docs.github.com/rest/pulls/pulls#create-a-pull-request",
            "status": "422",
        },
    )
    with pytest.raises(ClassifiedFailure) as caught:
        GitHubForge(repository).create_pull_request(
            head="changes", base="master", title="t", body="b"
        )
    assert caught.value.action is Action.MANUAL_REVIEW


def test_mark_ready_sends_the_pull_requests_node_id(github, repository):
    draft = pull_request(2, draft=True)
    github.get(f"{REPO_API}/pulls/2", json=draft)
    github.post(
        GRAPHQL,
        json={
            "data": {
                "markPullRequestReadyForReview": {
                    "pullRequest": {
                        "number": 2,
                        "url": "https://github.com/Codertocat/Hello-World/pull/2",
                        "isDraft": False,
                        "state": "OPEN",
                        "merged": False,
                        "title": "Update the README with new information.",
                        "headRefName": "changes",
                        "baseRefName": "master",
                        "headRefOid": HEAD_SHA,
                    }
                }
            }
        },
    )
    ready = GitHubForge(repository).mark_ready(2)

    sent = body_of(github.calls[1])
    assert sent["variables"] == {"pullRequestId": draft["node_id"]}
    assert "markPullRequestReadyForReview" in sent["query"]
    assert (ready["state"], ready["draft"]) == ("open", False)


def test_mark_ready_leaves_a_ready_pull_request_alone(github, repository):
    github.get(f"{REPO_API}/pulls/2", json=pull_request(2))
    assert GitHubForge(repository).mark_ready(2)["draft"] is False
    assert len(github.calls) == 1


def test_merge_sends_the_head_sha(github, repository):
    github.put(
        f"{REPO_API}/pulls/2/merge",
        json={
            "sha": "6dcb09b5b57875f334f61aebed695e2e4193db5e",
            "merged": True,
            "message": "Pull Request successfully merged",
        },
    )
    github.get(f"{REPO_API}/pulls/2", json=pull_request(2, merged=True))

    merged = GitHubForge(repository).merge_pull_request(
        2, sha=HEAD_SHA, method="squash", message="Update README (#2)"
    )

    assert merged["state"] == "merged"
    assert body_of(github.calls[0]) == {
        "sha": HEAD_SHA,
        "merge_method": "squash",
        "commit_message": "Update README (#2)",
    }


def test_merge_with_a_stale_sha_is_refused(github, repository):
    github.put(
        f"{REPO_API}/pulls/2/merge",
        status=409,
        json={
            "message": "Head branch was modified. Review and try the merge again.",
            "documentation_url": "https://docs.github.com/rest/pulls/pulls#merge-a-pull-request",
            "status": "409",
        },
    )
    with pytest.raises(ClassifiedFailure) as caught:
        GitHubForge(repository).merge_pull_request(2, sha="0" * 40)

    assert (caught.value.code, caught.value.action) == (409, Action.PULL_RETRY)
    assert "Head branch was modified" in caught.value.message
    assert len(github.calls) == 1  # a PUT is not retried


def test_an_unmergeable_pull_request_needs_a_person(github, repository):
    github.put(
        f"{REPO_API}/pulls/2/merge",
        status=405,
        json={
            "message": "Pull Request is not mergeable",
            "documentation_url": "https://docs.github.com/rest",
            "status": "405",
        },
    )
    with pytest.raises(ClassifiedFailure) as caught:
        GitHubForge(repository).merge_pull_request(2, sha=HEAD_SHA)

    assert (caught.value.code, caught.value.action) == (405, Action.MANUAL_REVIEW)


@pytest.mark.parametrize(
    ("status", "runs", "expected"),
    [
        (NO_STATUSES, [], "none"),
        (
            combined_status("success", ["ci/travis"]),
            [("completed", "success")],
            "success",
        ),
        (NO_STATUSES, [("completed", "success"), ("completed", "skipped")], "success"),
        (NO_STATUSES, [("completed", "success"), ("in_progress", None)], "pending"),
        (
            combined_status("pending", ["ci/travis"]),
            [("completed", "success")],
            "pending",
        ),
        (
            combined_status("success", ["ci/travis"]),
            [("completed", "failure")],
            "failure",
        ),
        (combined_status("error", ["ci/travis"]), [], "failure"),
        (NO_STATUSES, [("queued", None), ("completed", "timed_out")], "failure"),
    ],
)
def test_checks_state_combines_statuses_and_check_runs(
    github, repository, status, runs, expected
):
    github.get(f"{REPO_API}/commits/{HEAD_SHA}/status", json=status)
    github.get(f"{REPO_API}/commits/{HEAD_SHA}/check-runs", json=check_runs(*runs))

    assert GitHubForge(repository).checks_state(HEAD_SHA) == expected


def test_comment(github, repository):
    github.post(
        f"{REPO_API}/issues/1/comments",
        json=comment(1001, "Working on it <!-- codex:claim -->"),
        status=201,
    )
    made = GitHubForge(repository).comment(1, "Working on it <!-- codex:claim -->")

    assert made["id"] == 1001
    assert made["url"].endswith("#issuecomment-1001")
    assert body_of(github.calls[0]) == {"body": "Working on it <!-- codex:claim -->"}
    assert len(github.calls) == 1  # no GET of the issue first


def test_find_comment_only_finds_our_own(github, repository, settings):
    github.get(
        f"{REPO_API}/issues/1/comments",
        json=[
            comment(1, "I copied <!-- codex:claim -->", login="Codertocat"),
            comment(2, "Working on it <!-- codex:claim -->", login="octo-bot"),
            comment(3, "Something else", login="octo-bot"),
        ],
    )
    github.get(f"{API}/user", json={"login": "octo-bot", "id": 1, "type": "User"})
    forge = GitHubForge(repository)

    assert forge.find_comment(1, "<!-- codex:claim -->")["id"] == 2
    assert forge.find_comment(1, "<!-- codex:other -->") is None


def test_find_comment_as_an_app_uses_the_bot_login(github, repository, settings):
    settings.GITHUB_APP_ID = "987654"
    settings.GITHUB_APP_PRIVATE_KEY = "unused: the installation token is cached"
    settings.GITHUB_APP_INSTALLATION_ID = "1"
    GitHubToken.get_or_refresh(
        lambda: ("ghs_cached_installation_token0", None), name="installation:1"
    )
    github.get(
        f"{REPO_API}/issues/1/comments",
        json=[comment(7, "Done <!-- codex:release -->", login="codex[bot]")],
    )

    assert GitHubForge(repository).find_comment(1, "<!-- codex:release -->")["id"] == 7
    assert len(github.calls) == 1  # an app token cannot ask GET /user, nor needs to
    assert github.calls[0].request.headers["Authorization"] == (
        "token ghs_cached_installation_token0"
    )


def test_add_labels_and_close_issue(github, repository):
    github.post(
        f"{REPO_API}/issues/1/labels",
        json=[{"id": 208045946, "name": "codex", "color": "f29513", "default": False}],
    )
    github.patch(f"{REPO_API}/issues/1", json={"number": 1, "state": "closed"})
    forge = GitHubForge(repository)

    forge.add_labels(1, ["codex"])
    forge.add_labels(1, [])  # nothing to add: no request
    forge.close_issue(1)

    assert body_of(github.calls[0]) == {"labels": ["codex"]}
    assert body_of(github.calls[1]) == {"state": "closed", "state_reason": "completed"}
    assert len(github.calls) == 2


@pytest.mark.parametrize(
    ("permission", "role", "expected"),
    [
        ("admin", "admin", True),
        ("write", "maintain", True),
        ("write", "write", True),
        ("read", "triage", False),
        ("read", "read", False),
        ("none", "none", False),
    ],
)
def test_user_can_write(github, repository, permission, role, expected):
    github.get(
        f"{REPO_API}/collaborators/octocat/permission",
        json={
            "permission": permission,
            "role_name": role,
            "user": {"login": "octocat", "id": 1},
        },
    )
    assert GitHubForge(repository).user_can_write("octocat") is expected


def test_user_can_write_is_cached_for_ten_minutes(github, repository):
    github.get(
        f"{REPO_API}/collaborators/octocat/permission",
        json={
            "permission": "write",
            "role_name": "write",
            "user": {"login": "octocat"},
        },
    )
    forge = GitHubForge(repository)

    assert forge.user_can_write("octocat") is True
    assert GitHubForge(repository).user_can_write("OctoCat") is True
    assert len(github.calls) == 1


def test_an_unknown_user_cannot_write(github, repository):
    github.get(
        f"{REPO_API}/collaborators/ghost/permission",
        status=404,
        json={
            "message": "Not Found",
            "documentation_url": "https://docs.github.com/rest",
        },
    )
    assert GitHubForge(repository).user_can_write("ghost") is False
