"""Test helpers for backlog runs: cached open issues and finishing tasks."""

from __future__ import annotations

from codex.claims.models import BacklogRun
from codex.github.models import GitHubIssue
from codex.repositories.models import Repository
from codex.tasks.models import Task
from tests.factories import put_in_state


def cache_open_issues(repository: Repository, *numbers: int) -> list[GitHubIssue]:
    """Open issues in the GitHub cache, as the sync would store them."""
    return [
        GitHubIssue.objects.upsert_from_api(
            repository,
            {
                "number": number,
                "title": f"Issue {number}",
                "body": f"Body of issue {number}.",
                "state": "open",
                "updated_at": "2026-01-19T10:00:00Z",
            },
        )
        for number in numbers
    ]


def backlog_tasks(run: BacklogRun) -> list[Task]:
    """The run's tasks, lowest issue number first."""
    return list(run.tasks.order_by("issue_number"))


def finish(*tasks: Task, status: str = "completed") -> None:
    """Put tasks in a terminal state (tests only; bypasses the pipeline)."""
    for task in tasks:
        put_in_state(task, status=status)
