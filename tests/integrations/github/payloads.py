"""Real GitHub response shapes for the tests.

Issue, pull request and comment objects are GitHub's own (the webhook payloads
in shared/fixtures/github-webhooks, which carry the same objects as the REST
API), adjusted per test; the rest is copied from GitHub's REST and GraphQL
documentation examples.
"""

from __future__ import annotations

import copy
import json
from functools import cache
from typing import Any

from tests.shared_folder import WEBHOOKS

FULL_NAME = "Codertocat/Hello-World"
REPO_URL = f"https://github.com/{FULL_NAME}"
API = "https://api.github.com:443"
REPO_API = f"{API}/repos/{FULL_NAME}"
GRAPHQL = f"{API}/graphql"
HEAD_SHA = "ec26c3e57ca3a959ca5aad62de7213c562f8c821"


@cache
def _webhook(path: str) -> dict[str, Any]:
    return json.loads((WEBHOOKS / path).read_text())


def pull_request(
    number: int = 2,
    *,
    state: str = "open",
    merged: bool = False,
    draft: bool = False,
    head: str = "changes",
    sha: str = HEAD_SHA,
) -> dict[str, Any]:
    """A pull request as GET /repos/{owner}/{repo}/pulls/{number} returns it."""
    pr = copy.deepcopy(_webhook("pull_request/opened.payload.json")["pull_request"])
    pr.update(
        number=number,
        url=f"{REPO_API.replace(':443', '')}/pulls/{number}",
        html_url=f"{REPO_URL}/pull/{number}",
        state="closed" if merged else state,
        draft=draft,
        merged=merged,
        merged_at="2019-05-15T16:00:00Z" if merged else None,
    )
    pr["head"].update(ref=head, sha=sha, label=f"Codertocat:{head}")
    return pr


def issue(
    number: int = 1,
    *,
    updated_at: str = "2019-05-15T15:20:18Z",
    state: str = "open",
    title: str = "Spelling error in the README file",
    labels: list[str] | None = None,
) -> dict[str, Any]:
    """An issue as GET /repos/{owner}/{repo}/issues returns it."""
    item = copy.deepcopy(_webhook("issues/opened.payload.json")["issue"])
    item.update(
        number=number,
        updated_at=updated_at,
        state=state,
        title=title,
        html_url=f"{REPO_URL}/issues/{number}",
        closed_at=updated_at if state == "closed" else None,
    )
    if labels is not None:
        item["labels"] = [
            {
                "id": 1,
                "node_id": "MDU6TGFiZWwx",
                "name": name,
                "color": "d73a4a",
                "default": False,
                "description": "",
            }
            for name in labels
        ]
    return item


def pull_request_as_issue(
    number: int,
    *,
    updated_at: str,
    state: str = "open",
    merged: bool = False,
) -> dict[str, Any]:
    """A pull request as the issues list shows it (with `pull_request`)."""
    item = issue(number, updated_at=updated_at, state=state, title="Update README")
    item["pull_request"] = {
        "url": f"{REPO_API.replace(':443', '')}/pulls/{number}",
        "html_url": f"{REPO_URL}/pull/{number}",
        "diff_url": f"{REPO_URL}/pull/{number}.diff",
        "patch_url": f"{REPO_URL}/pull/{number}.patch",
        "merged_at": updated_at if merged else None,
    }
    return item


def comment(comment_id: int, body: str, *, login: str = "codex[bot]") -> dict[str, Any]:
    """An issue comment as GET .../issues/{number}/comments returns it."""
    item = copy.deepcopy(_webhook("issue_comment/created.payload.json")["comment"])
    item.update(
        id=comment_id,
        body=body,
        html_url=f"{REPO_URL}/issues/1#issuecomment-{comment_id}",
    )
    item["user"]["login"] = login
    return item


def review(
    review_id: int, body: str | None, *, login: str = "codex[bot]", number: int = 2
) -> dict[str, Any]:
    """A pull request review as POST/GET .../pulls/{number}/reviews returns it
    (the webhook's review object, which is the REST API's)."""
    item = copy.deepcopy(
        _webhook("pull_request_review/submitted.payload.json")["review"]
    )
    item.update(
        id=review_id,
        body=body,
        state="COMMENTED",
        html_url=f"{REPO_URL}/pull/{number}#pullrequestreview-{review_id}",
        pull_request_url=f"{REPO_API.replace(':443', '')}/pulls/{number}",
    )
    item["user"]["login"] = login
    return item


def combined_status(state: str, contexts: list[str]) -> dict[str, Any]:
    """GET /repos/{owner}/{repo}/commits/{ref}/status (GitHub's docs example)."""
    return {
        "state": state,
        "statuses": [
            {
                "url": f"{REPO_API.replace(':443', '')}/statuses/{HEAD_SHA}",
                "avatar_url": "https://github.com/images/error/hubot_happy.gif",
                "id": 1 + index,
                "node_id": "MDY6U3RhdHVzMQ==",
                "state": state,
                "description": "Build has completed successfully",
                "target_url": "https://ci.example.com/1000/output",
                "context": context,
                "created_at": "2012-07-20T01:19:13Z",
                "updated_at": "2012-07-20T01:19:13Z",
            }
            for index, context in enumerate(contexts)
        ],
        "sha": HEAD_SHA,
        "total_count": len(contexts),
        "repository": {"id": 1296269, "full_name": FULL_NAME},
        "commit_url": f"{REPO_API.replace(':443', '')}/commits/{HEAD_SHA}",
        "url": f"{REPO_API.replace(':443', '')}/commits/{HEAD_SHA}/status",
    }


def check_runs(*runs: tuple[str, str | None]) -> dict[str, Any]:
    """GET .../commits/{ref}/check-runs with (status, conclusion) per run."""
    base = _webhook("check_run/completed.payload.json")["check_run"]
    listed = []
    for index, (status, conclusion) in enumerate(runs):
        run = copy.deepcopy(base)
        run.update(
            id=4 + index,
            status=status,
            conclusion=conclusion,
            head_sha=HEAD_SHA,
            name=f"check-{index}",
        )
        listed.append(run)
    return {"total_count": len(listed), "check_runs": listed}


def installation_token(token: str, expires_at: str) -> dict[str, Any]:
    """POST /app/installations/{id}/access_tokens (GitHub's docs example)."""
    return {
        "token": token,
        "expires_at": expires_at,
        "permissions": {
            "issues": "write",
            "contents": "write",
            "pull_requests": "write",
        },
        "repository_selection": "selected",
    }


def rate_limited(kind: str = "primary") -> dict[str, Any]:
    """The body GitHub sends with a primary or secondary rate limit."""
    if kind == "primary":
        message = (
            "API rate limit exceeded for installation ID 123. If you reach out to "
            "GitHub Support for help, please include the request ID "
            "ABCD:1234:5678:9ABC:DEF0."
        )
    else:
        message = (
            "You have exceeded a secondary rate limit. Please wait a few minutes "
            "before you try again. If you reach out to GitHub Support for help, "
            "please include the request ID ABCD:1234:5678:9ABC:DEF0."
        )
    return {
        "message": message,
        "documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api",
        "status": "403",
    }
