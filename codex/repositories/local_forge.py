"""The local forge: a repository whose remote is a bare git repository on disk
and whose pull requests live in the database (docs/architecture.md#apps).

It implements `codex.repositories.forge.Forge` for a Repository whose url is
`file:///abs/path/name.git`:

- the remote is the bare repository itself (`remote_url()` is its path) and no
  credentials are needed (`git_credentials()` is empty);
- pull requests are LocalPullRequest rows, numbered per repository from 1, at
  most one open per head branch. Their `head_sha` is re-read from the bare
  repository's branch whenever one is read, as GitHub reports the live head;
- merging is a real git merge into the base branch of the bare repository
  (integrations.git.merge_into: merge commit, squash or rebase), refused with
  manual_review when the branch head is no longer the sha the caller checked,
  or when the change conflicts;
- issues of a local repository are just numbers: comments, labels and closing
  are recorded as LocalIssue and LocalComment rows on first use. As on GitHub,
  a pull request is also an issue: comments on its number are its comments,
  and closing its number closes it;
- there is no CI: `checks_state` answers "none" (the Forge protocol's "no
  checks exist"), which callers treat like GitHub's repository without checks,
  never as a pass a check reported;
- there are no accounts or permissions: `user_can_write` is True for anyone.
  Whoever can reach the operator console of a local-forge Codex can also write
  to the folder on disk; the local forge is for trying Codex and for tests.

Errors are ClassifiedFailure with source "git": unknown pull requests and
refused merges are manual_review (what GitHub's 404 and 422 map to), git's own
failures are classified by integrations.git.
"""

from __future__ import annotations

from pathlib import Path

from django.db import IntegrityError, transaction
from django.db.models import Max
from django.utils import timezone

from codex.core.errors import NO_RESPONSE, Action, ClassifiedFailure, make_error
from codex.repositories.forge import Comment, PullRequest
from codex.repositories.models import (
    LocalComment,
    LocalIssue,
    LocalPullRequest,
    Repository,
)
from integrations.git import branch_sha, merge_into

State = LocalPullRequest.State

# Attempts at taking the next pull request number when another worker takes
# the same one at the same moment (the unique constraint decides).
NUMBER_TRIES = 5


def _refused(message: str) -> ClassifiedFailure:
    """A request the local forge refuses: a person has to look."""
    return make_error("git", NO_RESPONSE, Action.MANUAL_REVIEW, message).exception()


class LocalForge:
    """The Forge of a local repository (see the module docstring)."""

    def __init__(self, repository: Repository) -> None:
        self.repository = repository

    @property
    def bare(self) -> Path:
        """The bare repository on disk."""
        return Path(self.repository.local_path)

    # -- remote -----------------------------------------------------------------

    def remote_url(self) -> str:
        """The bare repository's path: git fetches from and pushes to it."""
        return self.repository.local_path

    def git_credentials(self) -> dict[str, str]:
        """Nothing: a folder on disk needs no credentials."""
        return {}

    # -- pull requests ----------------------------------------------------------

    def _pulls(self):
        return LocalPullRequest.objects.filter(repository=self.repository)

    def _url(self, number: int) -> str:
        return f"{self.repository.url}/pull/{number}"

    def _as_dict(self, pull: LocalPullRequest) -> PullRequest:
        return PullRequest(
            number=pull.number,
            url=self._url(pull.number),
            head=pull.head,
            base=pull.base,
            head_sha=pull.head_sha,
            state=pull.state,
            draft=pull.draft,
            title=pull.title,
        )

    def _refreshed(self, pull: LocalPullRequest) -> LocalPullRequest:
        """`pull` with head_sha re-read from the bare repository while it is
        open (a push to the branch moves it, as on GitHub); a deleted branch
        keeps the last sha seen."""
        if pull.state == State.OPEN:
            sha = branch_sha(self.bare, pull.head)
            if sha and sha != pull.head_sha:
                pull.head_sha = sha
                LocalPullRequest.objects.filter(pk=pull.pk).update(head_sha=sha)
        return pull

    def _get(self, number: int) -> LocalPullRequest:
        try:
            return self._pulls().get(number=number)
        except LocalPullRequest.DoesNotExist:
            raise _refused(
                f"{self.repository.full_name} has no pull request #{number}"
            ) from None

    def find_pull_request(self, head: str) -> PullRequest | None:
        """The open pull request of branch `head`, else its latest merged one."""
        pull = (
            self._pulls().filter(head=head, state=State.OPEN).first()
            or self._pulls().filter(head=head, state=State.MERGED).first()
        )
        return None if pull is None else self._as_dict(self._refreshed(pull))

    def create_pull_request(
        self, *, head: str, base: str, title: str, body: str, draft: bool = False
    ) -> PullRequest:
        """Open pull request number max+1 of `head` into `base`.

        Refused (manual_review) when a branch does not exist in the bare
        repository or `head` already has an open pull request.
        """
        head_sha = branch_sha(self.bare, head)
        if head_sha is None:
            raise _refused(f"head branch {head!r} does not exist in {self.bare}")
        if branch_sha(self.bare, base) is None:
            raise _refused(f"base branch {base!r} does not exist in {self.bare}")
        for _ in range(NUMBER_TRIES):
            self._refuse_second_open(head)
            highest = self._pulls().aggregate(highest=Max("number"))["highest"]
            try:
                with transaction.atomic():
                    pull = LocalPullRequest.objects.create(
                        repository=self.repository,
                        number=(highest or 0) + 1,
                        head=head,
                        base=base,
                        title=title,
                        body=body,
                        draft=draft,
                        head_sha=head_sha,
                    )
            except IntegrityError:
                # Someone took the number, or opened one for `head`: look again.
                continue
            return self._as_dict(pull)
        self._refuse_second_open(head)
        raise _refused("could not allocate a pull request number; try again")

    def _refuse_second_open(self, head: str) -> None:
        existing = self._pulls().filter(head=head, state=State.OPEN).first()
        if existing is not None:
            raise _refused(
                f"a pull request for {head} is already open: #{existing.number}"
            )

    def get_pull_request(self, number: int) -> PullRequest:
        """Pull request `number` as it is now (head_sha from the bare repo)."""
        return self._as_dict(self._refreshed(self._get(number)))

    def mark_ready(self, number: int) -> PullRequest:
        """No longer a draft (idempotent)."""
        pull = self._get(number)
        if pull.draft:
            pull.draft = False
            pull.save(update_fields=["draft"])
        return self._as_dict(self._refreshed(pull))

    def merge_pull_request(
        self, number: int, *, sha: str, method: str = "squash", message: str = ""
    ) -> PullRequest:
        """Merge pull request `number` into its base in the bare repository,
        only if its branch head is still `sha`; return it marked merged with
        `merge_sha` (the base's new tip).

        Refused (manual_review): a draft, a closed pull request, a head that
        moved, a conflict. A pull request already merged at `sha` is returned
        as it is, so a retried step does not fail.
        """
        with transaction.atomic():
            # The row lock makes two workers merging the same number take turns;
            # the second sees it merged.
            pull = self._pulls().select_for_update().filter(number=number).first()
            if pull is None:
                raise _refused(
                    f"{self.repository.full_name} has no pull request #{number}"
                )
            if pull.state == State.MERGED and pull.head_sha == sha:
                return self._as_dict(pull)
            if pull.state != State.OPEN:
                raise _refused(f"pull request #{number} is {pull.state}")
            if pull.draft:
                raise _refused(f"pull request #{number} is a draft")
            current = branch_sha(self.bare, pull.head)
            if current != sha:
                raise _refused(
                    f"pull request #{number}: {pull.head} is at "
                    f"{current or 'nothing (deleted)'}, not {sha}; "
                    "review the new head before merging"
                )
            merge_sha = merge_into(
                self.bare,
                base=pull.base,
                head=sha,
                method=method,
                message=message or self._merge_message(pull, method),
            )
            pull.state = State.MERGED
            pull.head_sha = sha
            pull.merge_sha = merge_sha
            pull.merged_at = timezone.now()
            pull.save(update_fields=["state", "head_sha", "merge_sha", "merged_at"])
        return self._as_dict(pull)

    @staticmethod
    def _merge_message(pull: LocalPullRequest, method: str) -> str:
        """GitHub's default messages: the title with the number for a squash,
        "Merge pull request #n from head" for a merge commit."""
        if method == "squash":
            return f"{pull.title} (#{pull.number})\n\n{pull.body}".strip()
        return f"Merge pull request #{pull.number} from {pull.head}\n\n{pull.title}"

    def checks_state(self, sha: str) -> str:
        """Always "none": the local forge runs no CI (see the module docstring)."""
        return "none"

    # -- issues and comments ----------------------------------------------------

    def _issue(self, number: int) -> LocalIssue:
        issue, _ = LocalIssue.objects.get_or_create(
            repository=self.repository, number=number
        )
        return issue

    def _comment_dict(self, comment: LocalComment, number: int) -> Comment:
        return Comment(
            id=comment.pk,
            url=f"{self.repository.url}/issues/{number}#comment-{comment.pk}",
            body=comment.body,
        )

    def comment(self, issue_number: int, body: str) -> Comment:
        """Record a comment on issue or pull request `issue_number`."""
        comment = LocalComment.objects.create(
            issue=self._issue(issue_number), body=body
        )
        return self._comment_dict(comment, issue_number)

    def find_comment(self, issue_number: int, marker: str) -> Comment | None:
        """The first comment on `issue_number` containing `marker`."""
        comment = (
            LocalComment.objects.filter(
                issue__repository=self.repository,
                issue__number=issue_number,
                body__contains=marker,
            )
            .order_by("id")
            .first()
        )
        return None if comment is None else self._comment_dict(comment, issue_number)

    def edit_comment(self, comment_id: int, body: str) -> Comment:
        """Replace the body of comment `comment_id` of this repository."""
        comment = LocalComment.objects.select_related("issue").get(
            pk=comment_id, issue__repository=self.repository
        )
        comment.body = body
        comment.save(update_fields=["body"])
        return self._comment_dict(comment, comment.issue.number)

    def approvals(self, number: int) -> list[dict[str, str]]:
        """None: the local forge has no reviews; people approve on the task
        page (docs/gates.md)."""
        return []

    def post_review(self, number: int, body: str) -> Comment:
        """A review is a comment on the pull request's number here (the local
        forge has no review threads)."""
        self._get(number)  # an unknown pull request is refused
        return self.comment(number, body)

    def find_review(self, number: int, marker: str) -> Comment | None:
        """The review comment on pull request `number` containing `marker`."""
        return self.find_comment(number, marker)

    def add_labels(self, issue_number: int, labels: list[str]) -> None:
        """Record `labels` on `issue_number` (each once, in order of arrival)."""
        self._issue(issue_number)
        with transaction.atomic():
            issue = LocalIssue.objects.select_for_update().get(
                repository=self.repository, number=issue_number
            )
            merged = list(dict.fromkeys([*issue.labels, *labels]))
            if merged != issue.labels:
                issue.labels = merged
                issue.save(update_fields=["labels"])

    def close_issue(self, issue_number: int, comment: str = "") -> None:
        """Record `issue_number` closed, with `comment` when it closes now; an
        open pull request of that number is closed too (unmerged)."""
        self._issue(issue_number)
        now = timezone.now()
        with transaction.atomic():
            issue = LocalIssue.objects.select_for_update().get(
                repository=self.repository, number=issue_number
            )
            if issue.closed_at is not None:
                return
            if comment:
                LocalComment.objects.create(issue=issue, body=comment)
            issue.closed_at = now
            issue.save(update_fields=["closed_at"])
            self._pulls().filter(number=issue_number, state=State.OPEN).update(
                state=State.CLOSED, closed_at=now
            )

    def user_can_write(self, login: str) -> bool:
        """True for anyone: the local forge has no permissions (module docstring)."""
        return True
