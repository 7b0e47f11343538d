"""The forge interface: what Codex asks of the place a repository's remote and
pull requests live. Two implementations, selected per repository:

- GitHub (`integrations.github.forge.GitHubForge`), through PyGithub;
- the local forge (`codex.repositories.local_forge.LocalForge`): the remote is a
  bare repository on disk and pull requests live in the database; merging is a
  real git merge. It lets a newcomer, the demo and the end-to-end tests run the
  whole pipeline without GitHub.

Every method that changes something outside the database is called through
`codex.core.store.side_effects.perform_once` by its callers, with the matching
lookup method (`find_pull_request`, `find_comment`, `find_review`) so that a
retried step never makes a second pull request, comment or review. Failures
are raised as `codex.core.errors.ClassifiedFailure`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from django.utils.module_loading import import_string

# The records both forges return (plain data, defined below the domain).
from integrations.github.records import Comment, PullRequest

if TYPE_CHECKING:
    from codex.repositories.models import Repository


class Forge(Protocol):
    """What Codex needs from a forge."""

    def remote_url(self) -> str:
        """The URL git pushes to and fetches from (no credentials in it)."""
        ...

    def git_credentials(self) -> dict[str, str]:
        """Environment for git to authenticate (never on the command line)."""
        ...

    def find_pull_request(self, head: str) -> PullRequest | None:
        """The open or merged pull request of branch `head`, if there is one."""
        ...

    def create_pull_request(
        self, *, head: str, base: str, title: str, body: str, draft: bool = False
    ) -> PullRequest:
        """Open a pull request (look first with find_pull_request)."""
        ...

    def get_pull_request(self, number: int) -> PullRequest:
        """One pull request's current state."""
        ...

    def mark_ready(self, number: int) -> PullRequest:
        """Turn a draft pull request into one ready for review."""
        ...

    def merge_pull_request(
        self, number: int, *, sha: str, method: str = "squash", message: str = ""
    ) -> PullRequest:
        """Merge, but only if the head is still `sha` (a racing push refuses)."""
        ...

    def checks_state(self, sha: str) -> str:
        """The combined CI state of a commit: success, pending, failure or none."""
        ...

    def comment(self, issue_number: int, body: str) -> Comment:
        """Comment on an issue or pull request."""
        ...

    def find_comment(self, issue_number: int, marker: str) -> Comment | None:
        """A comment of ours on the issue containing `marker`, if any."""
        ...

    def edit_comment(self, comment_id: int, body: str) -> Comment:
        """Replace the body of one of our comments (the progress comment)."""
        ...

    def approvals(self, number: int) -> list[dict[str, str]]:
        """Who approves pull request `number` now, and at which commit."""
        ...

    def post_review(self, number: int, body: str) -> Comment:
        """Post the reviewer's comments on pull request `number` as one
        review that neither approves nor requests changes (look first with
        find_review)."""
        ...

    def find_review(self, number: int, marker: str) -> Comment | None:
        """A review of ours on pull request `number` containing `marker`."""
        ...

    def add_labels(self, issue_number: int, labels: list[str]) -> None:
        """Add labels to an issue (idempotent)."""
        ...

    def close_issue(self, issue_number: int, comment: str = "") -> None:
        """Close an issue (idempotent)."""
        ...

    def user_can_write(self, login: str) -> bool:
        """Whether `login` has write access to the repository."""
        ...


FORGES = {
    "github": "integrations.github.forge.GitHubForge",
    "local": "codex.repositories.local_forge.LocalForge",
}


def get_forge(repository: Repository) -> Forge:
    """The forge implementation for `repository`."""
    return import_string(FORGES[repository.forge])(repository)
