"""A GitHub repository behind `responses`, for pipeline fault tests.

PyGithub talks to it over `requests` exactly as to api.github.com; it keeps
the state a task's steps change (pull requests, comments, the issue) and
answers with GitHub's own payload shapes (tests/integrations/github/payloads).
Faults are scripted per request: `fault(...)` answers the next matching
request with an error instead, or, with `after_applying`, carries the write
out first and then answers with the error (GitHub applied it, the answer was
lost: a 502 from a proxy).

The repository's git remote is a bare repository on disk (`bare`): pull
requests' head shas are read from it, and merging one really merges it there,
so what lands on `main` is real.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import responses

from tests.integrations.github.payloads import (
    FULL_NAME,
    check_runs,
    combined_status,
    comment,
    issue,
    pull_request,
)

OWNER = FULL_NAME.split("/")[0]
API_URL = re.compile(r"https://api\.github\.com(:443)?/.*")
BOT_LOGIN = "codex-bot"
BAD_CREDENTIALS = {
    "message": "Bad credentials",
    "documentation_url": "https://docs.github.com/rest",
    "status": "401",
}
NOT_FOUND = {
    "message": "Not Found",
    "documentation_url": "https://docs.github.com/rest/issues/issues#get-an-issue",
    "status": "404",
}
DELETED = {
    "message": "This issue was deleted",
    "documentation_url": "https://docs.github.com/rest/issues/issues#get-an-issue",
    "status": "410",
}
BAD_GATEWAY = {"message": "Server Error"}


@dataclass
class Fault:
    method: str
    path: re.Pattern[str]
    status: int
    body: dict[str, Any]
    # Headers, or a function making them when the request comes (a reset time
    # relative to then).
    headers: dict[str, str] | Callable[[], dict[str, str]] = field(default_factory=dict)
    after_applying: bool = False
    times: int = 1

    def answer_headers(self) -> dict[str, str]:
        return self.headers() if callable(self.headers) else dict(self.headers)


def _git(bare: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args],
        cwd=bare,
        check=True,
        capture_output=True,
        text=True,
        env={
            "PATH": "/usr/bin:/bin",
            "GIT_AUTHOR_NAME": "GitHub",
            "GIT_AUTHOR_EMAIL": "noreply@github.com",
            "GIT_COMMITTER_NAME": "GitHub",
            "GIT_COMMITTER_EMAIL": "noreply@github.com",
            "GIT_CONFIG_NOSYSTEM": "1",
            "HOME": str(bare),
        },
    ).stdout.strip()


class FakeGitHub:
    """One repository (Codertocat/Hello-World) with issue `issue_number`."""

    def __init__(self, mock: responses.RequestsMock, bare: Path, issue_number: int):
        self.bare = bare
        self.pulls: dict[int, dict[str, Any]] = {}
        self.comments: dict[int, list[dict[str, Any]]] = {issue_number: []}
        self.issue_state = {issue_number: "open"}
        self.deleted: dict[int, int] = {}  # issue -> 404 or 410
        self.revoked: set[str] = set()
        self.faults: list[Fault] = []
        self.requests: list[tuple[str, str]] = []
        self.writes: Counter[str] = Counter()  # what GitHub actually applied
        self.tokens: list[str] = []
        self._next_number = 10
        self._comment_ids = 9000
        for method in ("GET", "POST", "PUT", "PATCH", "DELETE"):
            mock.add_callback(method, API_URL, callback=self._answer)

    # -- scripting -------------------------------------------------------------

    def fault(
        self,
        method: str,
        path: str,
        status: int,
        body: dict[str, Any],
        *,
        headers: dict[str, str] | Callable[[], dict[str, str]] | None = None,
        after_applying: bool = False,
        times: int = 1,
    ) -> None:
        """Answer the next `times` requests `method path` (a regular expression
        matched against the path) with `status`, `body` and `headers`."""
        self.faults.append(
            Fault(
                method,
                re.compile(path),
                status,
                body,
                headers or {},
                after_applying,
                times,
            )
        )

    def requests_to(self, method: str, path: str) -> int:
        pattern = re.compile(path)
        return sum(1 for m, p in self.requests if m == method and pattern.search(p))

    # -- the server -------------------------------------------------------------

    def _answer(self, request) -> tuple[int, dict[str, str], str]:
        parts = urlsplit(request.url)
        path = parts.path
        method = request.method
        self.requests.append((method, path))
        token = (request.headers.get("Authorization") or "").split(" ")[-1]
        self.tokens.append(token)
        if token in self.revoked:
            return self._json(401, BAD_CREDENTIALS)
        fault = self._fault_for(method, path)
        if fault is not None and not fault.after_applying:
            return self._json(fault.status, fault.body, fault.answer_headers())
        body = json.loads(request.body) if request.body else {}
        status, payload = self._route(method, path, parse_qs(parts.query), body)
        if fault is not None:
            return self._json(fault.status, fault.body, fault.answer_headers())
        return self._json(status, payload)

    def _fault_for(self, method: str, path: str) -> Fault | None:
        for fault in self.faults:
            if fault.times and fault.method == method and fault.path.search(path):
                fault.times -= 1
                return fault
        return None

    @staticmethod
    def _json(
        status: int, payload: Any, headers: dict[str, str] | None = None
    ) -> tuple[int, dict[str, str], str]:
        return (
            status,
            {"Content-Type": "application/json; charset=utf-8", **(headers or {})},
            json.dumps(payload),
        )

    def _route(self, method, path, query, body) -> tuple[int, Any]:
        repo = f"/repos/{FULL_NAME}"
        if path == "/user":
            return 200, {"login": BOT_LOGIN, "id": 1, "type": "User"}
        if path == "/graphql":
            return self._mark_ready(body)
        if path == repo:
            return 200, {"id": 1296269, "full_name": FULL_NAME, "private": False}
        rest = path.removeprefix(repo)
        if match := re.fullmatch(r"/pulls", rest):
            if method == "POST":
                return self._create_pull(body)
            head = query.get("head", [""])[0].removeprefix(f"{OWNER}:")
            return 200, [pr for pr in self.pulls.values() if pr["head"]["ref"] == head]
        if match := re.fullmatch(r"/pulls/(\d+)", rest):
            return 200, self.pulls[int(match[1])]
        if match := re.fullmatch(r"/pulls/(\d+)/merge", rest):
            return self._merge(int(match[1]), body)
        if re.fullmatch(r"/commits/\w+/status", rest):
            return 200, combined_status("success", ["ci"])
        if re.fullmatch(r"/commits/\w+/check-runs", rest):
            return 200, check_runs(("completed", "success"))
        if match := re.fullmatch(r"/issues/(\d+)(/comments)?", rest):
            number = int(match[1])
            if number in self.deleted:
                status = self.deleted[number]
                return status, DELETED if status == 410 else NOT_FOUND
            if match[2] and method == "POST":
                self._comment_ids += 1
                self.writes["comment"] += 1
                made = comment(self._comment_ids, body["body"], login=BOT_LOGIN)
                self.comments[number].append(made)
                return 201, made
            if match[2]:
                return 200, self.comments[number]
            if method == "PATCH":
                self.writes["close_issue"] += 1
                self.issue_state[number] = body["state"]
            return 200, issue(number, state=self.issue_state[number])
        raise AssertionError(f"the fake GitHub has no route for {method} {path}")

    def _head_sha(self, branch: str) -> str:
        return _git(self.bare, "rev-parse", f"refs/heads/{branch}")

    def _create_pull(self, body: dict[str, Any]) -> tuple[int, Any]:
        head = body["head"]
        if any(
            pr["head"]["ref"] == head and pr["state"] == "open"
            for pr in self.pulls.values()
        ):
            return 422, {
                "message": "Validation Failed",
                "errors": [
                    {
                        "resource": "PullRequest",
                        "code": "custom",
                        "message": f"A pull request already exists for {OWNER}:{head}.",
                    }
                ],
            }
        self._next_number += 1
        number = self._next_number
        pr = pull_request(
            number, draft=bool(body.get("draft")), head=head, sha=self._head_sha(head)
        )
        pr.update(title=body["title"], body=body["body"], node_id=f"PR_{number}")
        pr["base"]["ref"] = body["base"]
        self.pulls[number] = pr
        self.writes["create_pull"] += 1
        return 201, pr

    def _mark_ready(self, body: dict[str, Any]) -> tuple[int, Any]:
        pr = next(
            pr
            for pr in self.pulls.values()
            if pr["node_id"] == body["variables"]["pullRequestId"]
        )
        pr["draft"] = False
        self.writes["mark_ready"] += 1
        ready = {
            "number": pr["number"],
            "url": pr["html_url"],
            "isDraft": False,
            "state": "OPEN",
            "merged": False,
            "title": pr["title"],
            "headRefName": pr["head"]["ref"],
            "baseRefName": pr["base"]["ref"],
            "headRefOid": pr["head"]["sha"],
        }
        return 200, {"data": {"markPullRequestReadyForReview": {"pullRequest": ready}}}

    def _merge(self, number: int, body: dict[str, Any]) -> tuple[int, Any]:
        pr = self.pulls[number]
        if pr["merged"]:
            return 405, {"message": "Pull Request is not mergeable"}
        head = self._head_sha(pr["head"]["ref"])
        if body.get("sha") and body["sha"] != head:
            return 409, {"message": "Head branch was modified. Review and try again."}
        # A real merge on the remote: main gets the branch's changes.
        _git(self.bare, "update-ref", "refs/heads/main", self._merged(head))
        pr.update(state="closed", merged=True, merged_at="2019-05-15T16:00:00Z")
        self.writes["merge"] += 1
        return 200, {"sha": head, "merged": True, "message": "Pull Request merged"}

    def _merged(self, head: str) -> str:
        # Fast-forward when main has not moved, else a merge commit's tree.
        base = self._head_sha("main")
        if _git(self.bare, "merge-base", base, head) == base:
            return head
        tree = _git(self.bare, "merge-tree", "--write-tree", base, head)
        return _git(
            self.bare, "commit-tree", tree, "-p", base, "-p", head, "-m", "Merge"
        )
