"""Release: release notes, and whether to merge. The pull request is merged
at the verified head sha, once, when the repository's merge gate lets it
(docs/gates.md), and the task's issue is closed saying where the work went."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from django.conf import settings

from agents.forge_steps import mark_ready, source_issue_gone
from agents.gate_steps import merge_gate
from agents.roles.base import COMMON_RULES, Role, RoleContext, Step
from codex.core.errors import ClassifiedFailure
from codex.core.store import perform_once, settle
from codex.tasks.runners import PhaseResult
from integrations.git import head_sha, mirror_path, remove_worktree
from integrations.github.forge import IssueGone

if TYPE_CHECKING:
    from codex.repositories.forge import Forge
    from codex.tasks.models import Task

SYSTEM_PROMPT = f"""\
You are the release manager of an autonomous software team. The change was
verified and reviewed. Write short release notes for it (what changed, for
whom, anything to watch) and say whether it should be merged now; give the
reason when it should not.

{COMMON_RULES}"""

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "release_notes": {"type": "string", "minLength": 1},
        "merge": {"type": "boolean"},
        "reason": {"type": "string"},
    },
    "required": ["release_notes", "merge"],
}

INSTRUCTIONS = "Write the release notes and decide whether to merge."


def to_phase_result(result: dict[str, Any], context: RoleContext) -> PhaseResult:
    """The notes, and merged as the runner found it (context.extra["merged"])."""
    merged = bool(context.extra.get("merged"))
    return PhaseResult(
        artifacts={"release-notes.md": result["release_notes"].strip() + "\n"},
        merged=merged,
        reason="" if merged else (result.get("reason") or "not merged"),
    )


def _close_issue(task: Task, forge: Forge, pull_url: str) -> None:
    """Say where the work went and close the task's issue, each at most
    once: the comment carries a marker that `find_comment` looks for when
    an earlier attempt did not finish (a 502 after GitHub posted it), so a
    retried release never comments twice. An issue deleted meanwhile has
    nothing left to close: the merge stands."""
    repository, issue = task.repository, task.issue_number
    marker = f"<!-- codex:done:{task.task_id} -->"
    try:
        perform_once(
            f"issue:done-comment:{repository.pk}:{issue}:{task.task_id}",
            lambda: dict(forge.comment(issue, f"Done in {pull_url}\n\n{marker}")),
            lookup=lambda: (
                None
                if (found := forge.find_comment(issue, marker)) is None
                else dict(found)
            ),
            task=task,
            kind="issue",
        )
        perform_once(
            f"issue:close:{repository.pk}:{issue}",
            lambda: (forge.close_issue(issue), {"closed": issue})[1],
            # Closing is idempotent: an unfinished attempt is simply redone.
            lookup=lambda: None,
            task=task,
            kind="issue",
        )
    except IssueGone as gone:
        task.record(
            "tool",
            by="agent:release",
            reason=f"nothing to close: {gone.error.message}",
            data={"tool": "close_issue", "success": False},
        )


def _merged_already(forge: Forge, branch: str) -> bool:
    pull = forge.find_pull_request(branch)
    return pull is not None and pull["state"] == "merged"


def merge(step: Step, role: Role, submitted: dict[str, Any]) -> PhaseResult:
    """Merge the task's pull request when the release manager and the
    repository's gate let it, then close the task's issue; `role` reads the
    submitted result."""
    task, forge, worktree, branch = step.task, step.forge, step.worktree, step.branch
    context, repository = step.context, step.repository
    if not submitted["merge"]:
        return role.to_phase_result(submitted, context)
    if getattr(settings, "CODEX_RELEASE_REQUIRES_APPROVAL", False) and not (
        _merged_already(forge, branch)
    ):
        # A pull request merged already (a parent's analysis merged a child's,
        # docs/children.md) has nothing left to approve: release settles it.
        return PhaseResult.escalate(
            "the release policy requires a person to approve the merge"
        )
    # The repository's merge gate, checked again at the merge (docs/gates.md).
    waiting = merge_gate(task, forge, branch)
    if waiting is not None:
        return waiting
    pull = forge.find_pull_request(branch)
    if pull is None:
        return PhaseResult.failed(f"no pull request for {branch} to merge")
    number = pull["number"]
    if pull["state"] == "merged":
        # An earlier attempt merged it (and died before recording that).
        settle(
            f"pr:merge:{repository.pk}:{number}:",
            {"merged": number, "url": pull["url"]},
            prefix=True,
        )
    else:
        gone = source_issue_gone(task, forge)
        if gone is not None:
            return gone
        if pull["draft"]:
            mark_ready(task, forge, branch)
        sha = head_sha(worktree)
        method = getattr(settings, "CODEX_MERGE_METHOD", "squash")
        perform_once(
            f"pr:merge:{repository.pk}:{number}:{sha}",
            lambda: dict(forge.merge_pull_request(number, sha=sha, method=method)),
            lookup=lambda: (
                dict(found)
                if (found := forge.get_pull_request(number))["state"] == "merged"
                else None
            ),
            task=task,
            kind="pr",
        )
    context.extra["merged"] = True
    if task.issue_number:
        _close_issue(task, forge, pull["url"])
    with contextlib.suppress(ClassifiedFailure, OSError):
        remove_worktree(mirror_path(repository), worktree, delete_branch=True)
    return role.to_phase_result(submitted, context)


class Release(Role):
    """The release phase: the merge at the gate, the issue closed."""

    def before_agent(self, step: Step) -> PhaseResult | None:
        # The merge gate before the release manager's run (docs/gates.md).
        return merge_gate(step.task, step.forge, step.branch)

    def finish(self, step: Step, submitted: dict[str, Any]) -> PhaseResult:
        return merge(step, self, submitted)


ROLE = Release(
    name="release",
    phase="release",
    system_prompt=SYSTEM_PROMPT,
    schema=SCHEMA,
    to_phase_result=to_phase_result,
    instructions=INSTRUCTIONS,
    documents=("spec.md",),
)
