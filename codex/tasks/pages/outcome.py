"""What a task has produced, for the top of its page: the pull request (a
link wherever one can be followed), the merged commit, and the change's
size (git's diff stat of the task's commits, read from the repository's
mirror or its local forge)."""

from __future__ import annotations

import hashlib
import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.core.cache import cache
from django.urls import reverse

from codex.repositories.models import LocalPullRequest
from codex.tasks.models import Task
from integrations.git.repository import mirror_path
from integrations.git.runner import git

logger = logging.getLogger(__name__)

SHA = re.compile(r"[0-9a-f]{7,64}")
# A diff stat never changes for the same commits: kept a day, read once.
DIFF_STAT_SECONDS = 24 * 3600
# The page waits at most this long for git; past it the stat is left out.
DIFF_STAT_TIMEOUT = 5


@dataclass(frozen=True)
class Outcome:
    """The pull request (`pr_link` empty where none can be followed), its
    merged commit where the forge keeps it, the number of commits and git's
    one-line diff stat ("3 files changed, 40 insertions(+), 2 deletions(-)")."""

    pr_url: str
    pr_link: str
    pr_merged: bool
    merged_commit: str
    commits: int
    diff_stat: str

    @property
    def anything(self) -> bool:
        return bool(self.pr_url or self.commits)


def task_outcome(task: Task, user: Any) -> Outcome:
    """The outcome of `task` as `user` may follow it."""
    local = _local_pull_request(task)
    return Outcome(
        pr_url=task.pr_url,
        pr_link=pull_request_link(task, user, local),
        pr_merged=task.pr_merged,
        merged_commit=local.merge_sha if local is not None else "",
        commits=len(task.commits or []),
        diff_stat=diff_stat(task),
    )


def pull_request_link(
    task: Task, user: Any, local: LocalPullRequest | None = None
) -> str:
    """A URL a browser can follow to the pull request: the forge's web page,
    or for the local forge (its URLs are file paths) the console's page of
    the pull request, for an operator; "" otherwise."""
    if task.pr_url.startswith(("https://", "http://")):
        return task.pr_url
    if local is not None and getattr(user, "is_staff", False):
        return reverse("admin:repositories_localpullrequest_change", args=[local.pk])
    return ""


def _local_pull_request(task: Task) -> LocalPullRequest | None:
    if not (task.branch and task.repository.is_local):
        return None
    return (
        LocalPullRequest.objects.filter(repository=task.repository, head=task.branch)
        .order_by("-number")
        .first()
    )


def diff_stat(task: Task) -> str:
    """git's diff stat of the task's commits, from their first parent to the
    last; "" when there are none or the repository cannot be read here."""
    commits = [str(sha) for sha in task.commits or []]
    # Written by workers from git's answers; anything else never reaches git.
    if not commits or not all(SHA.fullmatch(sha) for sha in commits):
        return ""
    repository = task.repository
    where = Path(repository.local_path if repository.is_local else "")
    if not repository.is_local:
        where = mirror_path(repository)
    key = (
        "codex:diff-stat:"
        + hashlib.sha256(f"{where}:{commits[0]}:{commits[-1]}".encode()).hexdigest()
    )
    stat = cache.get(key)
    if stat is None:
        stat = _git_stat(where, commits[0], commits[-1])
        if stat:
            cache.set(key, stat, DIFF_STAT_SECONDS)
    return stat


def _git_stat(where: Path, first: str, last: str) -> str:
    if not where.is_dir():
        return ""
    try:
        result = git(
            ["diff", "--shortstat", f"{first}^", last],
            where,
            timeout=DIFF_STAT_TIMEOUT,
            check=False,
        )
        if result.returncode != 0:  # the first commit has no parent
            result = git(
                ["show", "--shortstat", "--format=", last],
                where,
                timeout=DIFF_STAT_TIMEOUT,
                check=False,
            )
    except Exception:  # noqa: BLE001 - the page shows the rest without it
        logger.warning("no diff stat for %s..%s in %s", first, last, where)
        return ""
    return result.stdout.strip() if result.returncode == 0 else ""
