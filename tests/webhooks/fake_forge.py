"""A forge that records what Codex asks of it, for the webhook tests."""

from __future__ import annotations

import itertools
from typing import ClassVar

_ids = itertools.count(1000)


class FakeForge:
    """Writers, comments and calls kept on the class so tests can inspect them."""

    writers: ClassVar[set[str]] = set()
    comments: ClassVar[list[dict]] = []
    permission_checks: ClassVar[list[str]] = []

    def __init__(self, repository) -> None:
        self.repository = repository

    @classmethod
    def reset(cls) -> None:
        """Forget everything (one fresh forge per test)."""
        cls.writers = set()
        cls.comments = []
        cls.permission_checks = []

    def user_can_write(self, login: str) -> bool:
        """Whether `login` is in `writers`."""
        self.permission_checks.append(login)
        return login in self.writers

    def comment(self, issue_number: int, body: str) -> dict:
        """Record a comment."""
        comment = {
            "id": next(_ids),
            "url": f"{self.repository.url}/issues/{issue_number}#comment",
            "body": body,
            "issue_number": issue_number,
        }
        self.comments.append(comment)
        return comment

    def find_comment(self, issue_number: int, marker: str) -> dict | None:
        """A recorded comment on the issue containing `marker`."""
        for comment in self.comments:
            if comment["issue_number"] == issue_number and marker in comment["body"]:
                return comment
        return None
