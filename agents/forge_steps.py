"""Forge steps more than one role takes: a draft pull request made ready
for review (QA approves; release merges), and a request withdrawn because its
GitHub issue was deleted (before a pull request is opened or merged)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from codex.claims.models import IssueClaim
from codex.core.store import perform_once, settle
from codex.tasks.runners import PhaseResult
from integrations.github.forge import IssueGone

if TYPE_CHECKING:
    from codex.repositories.forge import Forge
    from codex.tasks.models import Task


def mark_ready(task: Task, forge: Forge, branch: str) -> None:
    """Verified: the draft pull request becomes ready for review."""
    pull = forge.find_pull_request(branch)
    if pull is None:
        return
    number = pull["number"]
    key = f"pr:ready:{task.repository.pk}:{branch}:{number}"
    if not pull["draft"]:
        settle(key, {"ready": number})  # an earlier attempt made it ready
        return
    perform_once(
        key,
        lambda: dict(forge.mark_ready(number)),
        lookup=lambda: (
            None if forge.get_pull_request(number)["draft"] else {"ready": number}
        ),
        task=task,
        kind="pr",
    )


def source_issue_gone(task: Task, forge: Forge) -> PhaseResult | None:
    """When the task's GitHub issue was deleted, the request is withdrawn:
    its claim is released for good and the task fails naming the issue,
    before a pull request is opened or merged for it. None otherwise.
    (The local forge has no `ensure_issue`: its issues are never deleted.)
    """
    ensure_issue = getattr(forge, "ensure_issue", None)
    if not task.issue_number or ensure_issue is None:
        return None
    try:
        ensure_issue(task.issue_number)
    except IssueGone as gone:
        reason = (
            f"the task's source issue #{task.issue_number} is gone: "
            f"{gone.error.message}"
        )
        IssueClaim.objects.release_deleted_issue(
            task.repository, task.issue_number, by="system:pipeline", reason=reason
        )
        return PhaseResult.failed(reason)
    return None
