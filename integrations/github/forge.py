"""GitHubForge: the Forge protocol (codex.repositories.forge) on GitHub.

Every method runs inside `github_errors`, so failures leave as
ClassifiedFailure. Writes are never retried by the client; callers wrap them
in `perform_once` with the matching lookup (`find_pull_request`,
`find_comment`) so that a retried step never makes a second one. Where
PyGithub would fetch an object only to act on it (an issue before commenting),
the call goes to its URL directly: one request instead of two.
"""

from __future__ import annotations

import base64
from functools import cached_property
from typing import TYPE_CHECKING, Any, Protocol

from django.core.cache import cache
from github import Github, GithubException, UnknownObjectException

from codex.core.errors import (
    NO_RESPONSE,
    Action,
    make_error,
)
from integrations.git.credentials import NO_PROMPT, header_env, origin_of
from integrations.github.client import (
    SOURCE,
    github_client,
    github_errors,
    github_token,
)
from integrations.github.forge_issues import IssueCalls, IssueGone
from integrations.github.origin import is_on_configured_github, web_origin
from integrations.github.records import PullRequest

if TYPE_CHECKING:
    from github.PullRequest import PullRequest as GhPullRequest
    from github.Repository import Repository as GhRepository

# How long a collaborator's write permission is trusted (asked on every
# comment command, so it must not cost a request each time).
PERMISSION_CACHE_SECONDS = 600
WRITE_PERMISSIONS = frozenset({"admin", "maintain", "write"})
MERGE_METHODS = frozenset({"merge", "squash", "rebase"})

# Check run conclusions that mean the commit is not good to merge.
FAILED_CONCLUSIONS = frozenset(
    {"failure", "timed_out", "cancelled", "action_required", "startup_failure", "stale"}
)

MARK_READY = """
mutation MarkReady($pullRequestId: ID!) {
  markPullRequestReadyForReview(input: {pullRequestId: $pullRequestId}) {
    pullRequest {
      number url isDraft state merged title
      headRefName baseRefName headRefOid
    }
  }
}
"""

__all__ = ["GitHubForge", "HostedRepository", "IssueGone"]


def _pull(pr: GhPullRequest) -> PullRequest:
    # The list endpoint has merged_at but no `merged`; reading `pr.merged`
    # there would cost a request per pull request.
    state = "merged" if pr.merged_at is not None else pr.state
    return PullRequest(
        number=pr.number,
        url=pr.html_url,
        head=pr.head.ref,
        base=pr.base.ref,
        head_sha=pr.head.sha,
        state=state,
        draft=bool(pr.draft),
        title=pr.title,
    )


class HostedRepository(Protocol):
    """The repository a forge works for, as this module reads it (the domain's
    registered repository is one)."""

    @property
    def pk(self) -> Any:
        """A stable key of the repository (for cache keys)."""
        ...

    @property
    def url(self) -> str:
        """Its web URL on GitHub, e.g. https://github.com/acme/web."""
        ...

    @property
    def full_name(self) -> str:
        """`owner/name`."""
        ...


class GitHubForge(IssueCalls):
    """The forge of a repository hosted on GitHub (or GitHub Enterprise)."""

    def __init__(self, repository: HostedRepository, *, client: Github | None = None):
        """`client` replaces the configured one (tests, a caller's own token)."""
        self.repository = repository
        self._client = client

    @cached_property
    def github(self) -> Github:
        """The PyGithub client (lazy: made on first use, no request).

        Only for a repository of the configured GitHub: the client talks to
        GITHUB_BASE_URL with Codex's token, so a row pointing elsewhere would
        have its owner/name looked up there instead (manual_review).
        """
        if self._client is None and not is_on_configured_github(self.repository.url):
            make_error(
                SOURCE,
                NO_RESPONSE,
                Action.MANUAL_REVIEW,
                f"{self.repository.url} is not on the configured GitHub "
                f"({web_origin()}): Codex has no GitHub access there",
            ).raise_()
        return self._client or github_client()

    @cached_property
    def repo(self) -> GhRepository:
        """The repository as a lazy PyGithub object (no request)."""
        return self.github.get_repo(self.repository.full_name)

    @property
    def owner(self) -> str:
        """The repository's owner (user or organisation)."""
        return self.repository.full_name.split("/", 1)[0]

    def _request(
        self, verb: str, path: str, **kwargs: Any
    ) -> tuple[dict[str, Any], Any]:
        return self.github.requester.requestJsonAndCheck(
            verb, f"{self.repo.url}{path}", **kwargs
        )

    # -- git ------------------------------------------------------------------

    def remote_url(self) -> str:
        """The https clone URL (no credentials in it)."""
        return f"{self.repository.url}.git"

    def git_credentials(self) -> dict[str, str]:
        """Environment for git: the token as an HTTP header through GIT_CONFIG_*
        (never in argv, URLs or files), scoped to the configured GitHub's
        origin, and none at all when the remote is anywhere else (an operator
        registered another host, or a legacy row): integrations.git.credentials.
        """
        remote, origin = self.remote_url(), web_origin()
        if origin_of(remote) != origin:
            return dict(NO_PROMPT)
        basic = base64.b64encode(f"x-access-token:{github_token()}".encode()).decode(
            "ascii"
        )
        return header_env(remote, origin, f"Authorization: basic {basic}")

    # -- pull requests ----------------------------------------------------------

    @github_errors
    def find_pull_request(self, head: str) -> PullRequest | None:
        """The open or merged pull request of branch `head` (open first);
        None when there is none or only closed, unmerged ones."""
        merged = None
        for pr in self.repo.get_pulls(state="all", head=f"{self.owner}:{head}"):
            found = _pull(pr)
            if found["state"] == "open":
                return found
            if found["state"] == "merged" and merged is None:
                merged = found
        return merged

    @github_errors
    def create_pull_request(
        self, *, head: str, base: str, title: str, body: str, draft: bool = False
    ) -> PullRequest:
        """Open a pull request: one POST, never retried automatically (look
        first with find_pull_request, through perform_once)."""
        return _pull(
            self.repo.create_pull(
                base=base, head=head, title=title, body=body, draft=draft
            )
        )

    @github_errors
    def get_pull_request(self, number: int) -> PullRequest:
        """One pull request's current state."""
        return _pull(self.repo.get_pull(number))

    @github_errors
    def mark_ready(self, number: int) -> PullRequest:
        """Turn a draft into a pull request ready for review (GraphQL: the REST
        API cannot). A pull request that is not a draft is returned as is."""
        pr = self.repo.get_pull(number)
        if not pr.draft:
            return _pull(pr)
        _, data = self.github.requester.graphql_query(
            MARK_READY, {"pullRequestId": pr.node_id}
        )
        ready = data["data"]["markPullRequestReadyForReview"]["pullRequest"]
        return PullRequest(
            number=ready["number"],
            url=ready["url"],
            head=ready["headRefName"],
            base=ready["baseRefName"],
            head_sha=ready["headRefOid"],
            state="merged" if ready["merged"] else ready["state"].lower(),
            draft=ready["isDraft"],
            title=ready["title"],
        )

    def merge_pull_request(
        self, number: int, *, sha: str, method: str = "squash", message: str = ""
    ) -> PullRequest:
        """Merge only if the head is still `sha`: GitHub refuses a head that
        moved with 409 ("Head branch was modified": pull_retry). 405 (not
        mergeable: conflicts, required checks or reviews) needs a person."""
        if method not in MERGE_METHODS:
            raise ValueError(f"merge method must be one of {sorted(MERGE_METHODS)}")
        payload: dict[str, Any] = {"sha": sha, "merge_method": method}
        if message:
            payload["commit_message"] = message
        with github_errors:
            try:
                self._request("PUT", f"/pulls/{number}/merge", input=payload)
            except GithubException as exc:
                if exc.status != 405:
                    raise
                detail = (exc.data or {}).get("message", "")
                make_error(
                    SOURCE,
                    405,
                    Action.MANUAL_REVIEW,
                    f"Pull request is not mergeable - needs a person: {detail}",
                    original=exc,
                ).raise_()
        return self.get_pull_request(number)

    @github_errors
    def checks_state(self, sha: str) -> str:
        """success, pending, failure or none, from the commit's combined status
        (legacy statuses) and its check runs (Actions and apps) together."""
        _, status = self._request("GET", f"/commits/{sha}/status")
        _, runs = self._request(
            "GET", f"/commits/{sha}/check-runs", parameters={"per_page": 100}
        )
        states: set[str] = set()
        # With no statuses at all GitHub reports "pending": that is "none".
        if status.get("total_count"):
            states.add("failure" if status["state"] == "error" else status["state"])
        for run in runs.get("check_runs", []):
            if run["status"] != "completed":
                states.add("pending")
            elif run["conclusion"] in FAILED_CONCLUSIONS:
                states.add("failure")
            else:  # success, neutral, skipped
                states.add("success")
        for state in ("failure", "pending", "success"):
            if state in states:
                return state
        return "none"

    def user_can_write(self, login: str) -> bool:
        """Whether `login` may write (admin, maintain or write), cached for ten
        minutes. An unknown user cannot."""
        key = f"codex:github:can-write:{self.repository.pk}:{login.lower()}"
        answer = cache.get(key)
        if answer is None:
            answer = self._ask_can_write(login)
            cache.set(key, answer, PERMISSION_CACHE_SECONDS)
        return answer

    @github_errors
    def _ask_can_write(self, login: str) -> bool:
        try:
            _, data = self._request("GET", f"/collaborators/{login}/permission")
        except UnknownObjectException:
            return False
        # `permission` is the legacy admin/write/read/none (maintain shows as
        # write); `role_name` carries maintain and custom roles.
        return bool({data.get("permission"), data.get("role_name")} & WRITE_PERMISSIONS)
