"""GitHubForge's issue and comment calls (a mixin of GitHubForge): comments,
reviews, labels, sub-issues and closing, each raising IssueGone when the issue
was deleted or moved.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterator
from typing import Any

from django.conf import settings
from django.core.cache import cache
from github import GithubException
from github.PaginatedList import PaginatedList
from github.PullRequestReview import PullRequestReview

from codex.core.errors import (
    Action,
    ClassifiedError,
    ClassifiedFailure,
    make_error,
)
from integrations.github.client import (
    SOURCE,
    app_configured,
    github_errors,
    github_token,
)
from integrations.github.records import Comment

# The authenticated user of a personal token, to recognise our own comments.
LOGIN_CACHE_SECONDS = 3600
# GitHub answers 410 "This issue was deleted" for a deleted issue, and 404 for
# one that was transferred elsewhere (or deleted long ago).
ISSUE_GONE_STATUSES = frozenset({404, 410})


class IssueGone(ClassifiedFailure):
    """An issue Codex works for is no longer on GitHub (deleted or transferred).

    An abort: nothing about it changes by retrying. `number` is the issue.
    """

    def __init__(self, error: ClassifiedError, number: int = 0) -> None:
        super().__init__(error)
        self.number = number

    def __reduce__(self):
        return (type(self), (self.error, self.number))


def _comment(data: dict[str, Any]) -> Comment:
    return Comment(id=int(data["id"]), url=data["html_url"], body=data["body"] or "")


class IssueCalls:
    """The issue and comment half of GitHubForge (integrations.github.forge)."""

    def _gone(self, number: int, exc: GithubException) -> IssueGone:
        detail = (
            (exc.data or {}).get("message", "") if isinstance(exc.data, dict) else ""
        )
        what = "was deleted" if exc.status == 410 else "was deleted or moved"
        error = make_error(
            SOURCE,
            exc.status,
            Action.ABORT,
            f"issue #{number} of {self.repository.full_name} {what} on GitHub"
            + (f": {detail}" if detail else ""),
            original=exc,
        )
        return IssueGone(error, number)

    @contextlib.contextmanager
    def _issue_calls(self, number: int) -> Iterator[None]:
        """404/410 on an issue's own URL (the repository answered): IssueGone."""
        try:
            yield
        except GithubException as exc:
            if exc.status in ISSUE_GONE_STATUSES:
                raise self._gone(number, exc) from exc
            raise

    @github_errors
    def ensure_issue(self, issue_number: int) -> None:
        """Raise IssueGone when the issue no longer exists (one GET).

        A 404 is told apart from a token that lost access by asking for the
        repository too: when that is invisible as well, the failure is the
        ordinary 404 (manual_review: a person checks the access).
        """
        try:
            self._request("GET", f"/issues/{issue_number}")
        except GithubException as exc:
            if exc.status == 404:
                self.github.requester.requestJsonAndCheck("GET", self.repo.url)
            if exc.status in ISSUE_GONE_STATUSES:
                raise self._gone(issue_number, exc) from exc
            raise

    @github_errors
    def comment(self, issue_number: int, body: str) -> Comment:
        """Comment on an issue or pull request (one POST, never retried).
        IssueGone when the issue was deleted."""
        with self._issue_calls(issue_number):
            _, data = self._request(
                "POST", f"/issues/{issue_number}/comments", input={"body": body}
            )
        return _comment(data)

    def _our_logins(self) -> set[str]:
        logins = (
            {settings.CODEX_BOT_LOGIN.lower()} if settings.CODEX_BOT_LOGIN else set()
        )
        if app_configured():
            return logins
        key = (
            "codex:github:login:" + hashlib.sha256(github_token().encode()).hexdigest()
        )
        login = cache.get(key)
        if login is None:
            _, me = self.github.requester.requestJsonAndCheck("GET", "/user")
            login = me["login"]
            cache.set(key, login, LOGIN_CACHE_SECONDS)
        return logins | {login.lower()}

    @github_errors
    def find_comment(self, issue_number: int, marker: str) -> Comment | None:
        """Our comment on the issue containing `marker` (the newest), if any."""
        ours = self._our_logins()
        found = None
        with self._issue_calls(issue_number):
            for comment in self.repo.get_issue(issue_number).get_comments():
                body = comment.body or ""
                if comment.user.login.lower() in ours and marker in body:
                    found = Comment(id=comment.id, url=comment.html_url, body=body)
        return found

    @github_errors
    def post_review(self, number: int, body: str) -> Comment:
        """Post a pull request review with event COMMENT (one POST, never
        retried; look first with find_review). COMMENT, because GitHub refuses
        REQUEST_CHANGES and APPROVE on a pull request the same account opened
        (422), which is how Codex's pull requests are opened; whether the
        change may merge is the review report's to say, not GitHub's review
        state. Failures leave as ClassifiedFailure: 404 (no such pull request
        or no access) and 422 (refused) need a person, 403/429 rate limits
        wait, 401 rotates the token, 5xx wait and retry."""
        _, data = self._request(
            "POST", f"/pulls/{number}/reviews", input={"body": body, "event": "COMMENT"}
        )
        return _comment(data)

    @github_errors
    def edit_comment(self, comment_id: int, body: str) -> Comment:
        """Replace the body of comment `comment_id` (the same comment, edited:
        a PATCH, which repeats harmlessly)."""
        _, data = self._request(
            "PATCH", f"/issues/comments/{comment_id}", input={"body": body}
        )
        return _comment(data)

    def _reviews(self, number: int) -> PaginatedList[PullRequestReview]:
        """Every review of pull request `number`, 100 a page."""
        return PaginatedList(
            PullRequestReview,
            self.github.requester,
            f"{self.repo.url}/pulls/{number}/reviews",
            {"per_page": 100},
        )

    @github_errors
    def approvals(self, number: int) -> list[dict[str, str]]:
        """The people whose latest verdict on pull request `number` approves
        it: login and the commit they approved (a later "changes requested"
        or a dismissal replaces an approval, as GitHub counts them)."""
        latest: dict[str, dict[str, str]] = {}
        reviews = self._reviews(number)
        for review in reviews:
            if review.user is None or review.state == "COMMENTED":
                continue
            latest[review.user.login.lower()] = {
                "login": review.user.login,
                "state": review.state,
                "commit": review.commit_id or "",
            }
        return [
            {"login": seen["login"], "commit": seen["commit"]}
            for seen in latest.values()
            if seen["state"] == "APPROVED"
        ]

    @github_errors
    def find_review(self, number: int, marker: str) -> Comment | None:
        """Our review on pull request `number` containing `marker` (the
        newest), read through every page of its reviews."""
        ours = self._our_logins()
        found = None
        reviews = self._reviews(number)
        for review in reviews:
            login = review.user.login.lower() if review.user else ""
            if login in ours and marker in (review.body or ""):
                found = Comment(id=review.id, url=review.html_url, body=review.body)
        return found

    @github_errors
    def create_issue(self, title: str, body: str) -> dict[str, Any]:
        """Open an issue (one POST, never retried; look first with
        find_issue). Returns its number, id (for sub-issues) and url."""
        _, data = self._request("POST", "/issues", input={"title": title, "body": body})
        return {"number": data["number"], "id": data["id"], "url": data["html_url"]}

    @github_errors
    def find_issue(self, marker: str) -> dict[str, Any] | None:
        """Our issue whose body contains `marker`, among the 100 newest."""
        ours = self._our_logins()
        _, items = self._request(
            "GET",
            "/issues",
            parameters={"state": "all", "sort": "created", "per_page": 100},
        )
        for item in items or []:
            login = ((item.get("user") or {}).get("login") or "").lower()
            if login in ours and marker in (item.get("body") or ""):
                return {
                    "number": item["number"],
                    "id": item["id"],
                    "url": item["html_url"],
                }
        return None

    @github_errors
    def add_sub_issue(self, issue_number: int, sub_issue_id: int) -> None:
        """Make issue id `sub_issue_id` a sub-issue of `issue_number` (GitHub's
        sub-issues API; 422 when it is one already)."""
        self._request(
            "POST",
            f"/issues/{issue_number}/sub_issues",
            input={"sub_issue_id": sub_issue_id},
        )

    @github_errors
    def add_labels(self, issue_number: int, labels: list[str]) -> None:
        """Add labels (GitHub keeps labels already there: idempotent)."""
        if labels:
            self._request(
                "POST", f"/issues/{issue_number}/labels", input={"labels": labels}
            )

    @github_errors
    def close_issue(self, issue_number: int, comment: str = "") -> None:
        """Close an issue, with a comment first when given (closing twice is
        harmless; the comment is the caller's to guard with find_comment)."""
        if comment:
            self.comment(issue_number, comment)
        with self._issue_calls(issue_number):
            self._request(
                "PATCH",
                f"/issues/{issue_number}",
                input={"state": "closed", "state_reason": "completed"},
            )

    # -- people -----------------------------------------------------------------
