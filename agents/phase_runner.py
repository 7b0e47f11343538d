"""The agent phase runner: a Claude agent does each phase's work in the task's
git worktree (CODEX_PHASE_RUNNER = "agents.phase_runner.AgentPhaseRunner").

For every step it picks the role of the task's phase (agents.roles), prepares
the worktree (the repository's mirror under CODEX_MIRROR_ROOT, a worktree under
CODEX_WORKTREE_ROOT/<task_id> on branch codex/<task_id>), runs the role's agent
in a Sandbox of that worktree, and turns the submitted result into a
PhaseResult. Around the agent, the runner does what must not be left to a
model:

- implementation: commits the developer's changes (commit_all), pushes the
  branch, opens the pull request as a draft (perform_once, looked up with
  find_pull_request) and reads the CI state (the local forge has none: "none"
  counts as passing there);
- verification: runs the repository's test command for real in the sandbox
  before the agent starts; the real run's counts and failures go into the
  report and overrule the agent; an approved verification marks the pull
  request ready for review;
- review: gives the reviewer the diff against the base branch;
- release: merges the pull request at the verified head sha (perform_once) and
  closes the task's issue.

With no ANTHROPIC_API_KEY every phase blocks with NO_KEY_REASON.
"""

from __future__ import annotations

import contextlib
import json
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.conf import settings

from agents.domain_tools import HUMAN_QUESTIONS, domain_tools
from agents.prompts import system_blocks, untrusted
from agents.roles import Role, RoleContext, role_for
from agents.roles.base import task_prompt
from agents.runtime import run_agent
from agents.tools import Sandbox, ToolError, ToolRecord
from codex.claims.models import IssueClaim
from codex.core.errors import ClassifiedFailure
from codex.core.side_effects import perform_once
from codex.repositories.forge import Forge, get_forge
from codex.tasks.models import Learning
from codex.tasks.runners import PhaseResult
from integrations.anthropic.client import ModelNotConfigured, model_client
from integrations.git import (
    add_worktree,
    branch_name,
    commit_all,
    ensure_mirror,
    fast_forward,
    head_sha,
    mirror_path,
    push,
    remove_worktree,
    run_git,
)
from integrations.github.forge import IssueGone

if TYPE_CHECKING:
    from codex.repositories.models import Repository
    from codex.tasks.models import Task

logger = logging.getLogger(__name__)

NO_KEY_REASON = "no agent backend configured: set ANTHROPIC_API_KEY"
DEFAULT_TEST_COMMAND = "python -B -m pytest -q -p no:cacheprovider"
DIFF_CHARS = 60_000
DOCUMENTS = {
    "intake": (),
    "planning": ("spec.md",),
    "implementation": ("spec.md", "plan.md", "tasks.md", "analysis.json"),
    "verification": ("spec.md", "tasks.md"),
    "review": ("spec.md", "plan.md"),
    "release": ("spec.md",),
}
# CI states a commit may have; "none" (no checks at all) passes on the local
# forge only, which runs no CI.
CI_PASSING = {"success": True, "failure": False, "error": False}


def test_command(repository: Repository) -> str:
    """The repository's test command: CODEX_TEST_COMMANDS[full_name or url],
    else CODEX_TEST_COMMAND, else DEFAULT_TEST_COMMAND."""
    per_repository = getattr(settings, "CODEX_TEST_COMMANDS", None) or {}
    return (
        per_repository.get(repository.full_name)
        or per_repository.get(repository.url)
        or getattr(settings, "CODEX_TEST_COMMAND", None)
        or DEFAULT_TEST_COMMAND
    )


def worktree_path(task: Task) -> Path:
    return Path(settings.CODEX_WORKTREE_ROOT).absolute() / task.task_id


def prepare_worktree(task: Task, forge: Forge, branch: str) -> Path:
    """The task's worktree on `branch`, the mirror fetched first, and moved
    up to the remote branch when someone pushed on top of our commits (so
    that QA tests, review reads and release merges what the pull request
    holds: GitHub refuses a merge at a stale head)."""
    repository = task.repository
    mirror = ensure_mirror(repository, forge.remote_url(), forge.git_credentials())
    worktree = add_worktree(
        mirror, worktree_path(task), branch, repository.default_branch
    )
    fast_forward(worktree, branch)
    return worktree


def latest_documents(task: Task, names: tuple[str, ...]) -> dict[str, str]:
    documents = {}
    for name in names:
        artifact = task.artifacts.filter(name=name).order_by("-created_at").first()
        if artifact is not None:
            documents[name] = artifact.content
    return documents


def latest_feedback(task: Task) -> str:
    """The newest feedback of either loop, as text for the developer."""
    entries = [
        (entry.get("at", ""), loop, entry)
        for loop, items in (task.feedback_history or {}).items()
        for entry in items
    ]
    if not entries:
        return ""
    _, loop, entry = max(entries, key=lambda item: item[0])
    return (
        f"The {loop} of cycle {entry.get('cycle')} requested changes:\n"
        + json.dumps(entry.get("feedback") or {}, indent=2, default=str)
    )


class AgentPhaseRunner:
    """Runs the current phase of a task with its role's agent."""

    def run(self, task: Task) -> PhaseResult:
        role = role_for(task.phase)
        try:
            client = model_client(role=role.name)
        except ModelNotConfigured:
            return PhaseResult.blocked(NO_KEY_REASON)
        try:
            return self._run(task, role, client)
        finally:
            client.close()

    # -- the step -----------------------------------------------------------

    def _run(self, task: Task, role: Role, client: Any) -> PhaseResult:
        repository = task.repository
        forge = get_forge(repository)
        branch = branch_name(task.task_id)
        worktree = prepare_worktree(task, forge, branch)
        sandbox = Sandbox(
            worktree, path=getattr(settings, "CODEX_SANDBOX_PATH", None) or None
        )
        context = RoleContext(task=task, branch=branch)
        extra = ""
        if role.phase == "verification":
            extra = self._run_tests(sandbox, context, repository)
        elif role.phase == "review":
            extra = self._diff(worktree, repository)
        prompt = task_prompt(
            task,
            documents=latest_documents(task, DOCUMENTS[role.phase]),
            instructions=f"{extra}\n\n{role.instructions}".strip(),
        )
        feedback = latest_feedback(task) if role.phase == "implementation" else ""
        learnings = [
            f"({learning.type}) {learning.content}"
            for learning in Learning.objects.for_prompt(repository)
        ]
        outcome = run_agent(
            client,
            system=system_blocks(
                role.system_prompt, learnings=learnings, feedback=feedback
            ),
            prompt=prompt,
            result_schema=role.schema,
            tools=[*sandbox.tools(), *domain_tools(context)],
            on_tool=lambda record: self._record_tool(task, role, record),
        )
        if context.extra.get(HUMAN_QUESTIONS):
            # ask_question(to="human"): a person must answer before work goes on.
            escalation = PhaseResult.escalate(
                "the agent asked a person",
                questions=list(context.extra[HUMAN_QUESTIONS]),
                code="needs_clarification",
            )
            escalation.metrics = outcome.metrics.as_dict()
            return escalation
        if not outcome.ok or outcome.result is None:
            return outcome.phase_result()
        submitted = outcome.result
        if role.phase == "implementation":
            result = self._implementation(
                task, role, forge, worktree, branch, submitted, context
            )
        elif role.phase == "release":
            result = self._release(task, forge, worktree, branch, submitted, context)
        else:
            result = role.to_phase_result(submitted, context)
            if (
                role.phase == "verification"
                and result.verification
                and result.verification.get("recommendation") == "approve"
            ):
                self._mark_ready(task, forge, branch)
        result.metrics = {**outcome.metrics.as_dict(), **result.metrics}
        return result

    @staticmethod
    def _record_tool(task: Task, role: Role, record: ToolRecord) -> None:
        task.record(
            "tool",
            by=f"agent:{role.name}",
            reason=record.error
            or f"{record.tool} {'ok' if record.success else 'failed'}",
            data={
                "tool": record.tool,
                "success": record.success,
                "metadata": record.metadata,
                "files_changed": list(record.files_changed),
            },
        )

    # -- verification and review inputs -------------------------------------

    @staticmethod
    def _run_tests(
        sandbox: Sandbox, context: RoleContext, repository: Repository
    ) -> str:
        command = test_command(repository)
        context.test_command = command
        try:
            run = sandbox.run_command(command)
        except ToolError as exc:
            context.test_exit_code = None
            context.test_output = f"the test command could not run: {exc}"
        else:
            context.test_exit_code = run.exit_code
            context.test_output = run.output
        status = (
            "timed out"
            if context.test_exit_code is None
            else f"exit code {context.test_exit_code}"
        )
        return (
            f"The test command `{command}` was run in the worktree ({status}):\n"
            + untrusted("test command output", context.test_output)
        )

    @staticmethod
    def _diff(worktree: Path, repository: Repository) -> str:
        diff = run_git(["diff", f"origin/{repository.default_branch}...HEAD"], worktree)
        if len(diff) > DIFF_CHARS:
            diff = diff[:DIFF_CHARS] + f"\n[diff cut at {DIFF_CHARS} characters]"
        return "The pull request's diff:\n" + untrusted("pull request diff", diff)

    # -- implementation -----------------------------------------------------

    def _implementation(
        self,
        task: Task,
        role: Role,
        forge: Forge,
        worktree: Path,
        branch: str,
        submitted: dict[str, Any],
        context: RoleContext,
    ) -> PhaseResult:
        repository = task.repository
        sha = commit_all(worktree, submitted["commit_message"], task.task_id)
        if sha is not None:
            task.record(
                "tool",
                by=f"agent:{role.name}",
                reason=f"commit {sha[:12]}",
                data={"tool": "commit", "success": True, "sha": sha},
            )
        ahead = run_git(
            ["rev-list", "--count", f"origin/{repository.default_branch}..HEAD"],
            worktree,
        ).strip()
        if ahead == "0":
            return PhaseResult.escalate(
                "the developer submitted without changing any file"
            )
        # A rebase onto someone else's push to the branch rewrites our commit.
        pushed = push(worktree, branch, forge.git_credentials())
        gone = self._source_issue_gone(task, forge)
        if gone is not None:
            return gone
        pull = perform_once(
            f"pr:create:{repository.pk}:{branch}",
            lambda: forge.create_pull_request(
                head=branch,
                base=repository.default_branch,
                title=f"{task.title} ({task.task_id})",
                body=f"{submitted['summary']}\n\nCodex-Task: {task.task_id}",
                draft=True,
            ),
            lookup=lambda: forge.find_pull_request(branch),
            task=task,
            kind="pr",
        )
        result = role.to_phase_result(submitted, context)
        result.commits = [pushed] if sha else []
        result.branch = branch
        result.pr_url = pull["url"]
        current = head_sha(worktree)
        state = forge.checks_state(current)
        if state == "none" and repository.is_local:
            result.ci_passing = True
        else:
            result.ci_passing = CI_PASSING.get(state)
        return result

    @staticmethod
    def _mark_ready(task: Task, forge: Forge, branch: str) -> None:
        """Verified: the draft pull request becomes ready for review."""
        pull = forge.find_pull_request(branch)
        if pull is None or not pull["draft"]:
            return
        number = pull["number"]
        perform_once(
            f"pr:ready:{task.repository.pk}:{branch}:{number}",
            lambda: dict(forge.mark_ready(number)),
            lookup=lambda: (
                None if forge.get_pull_request(number)["draft"] else {"ready": number}
            ),
            task=task,
            kind="pr",
        )

    # -- release ------------------------------------------------------------

    @staticmethod
    def _source_issue_gone(task: Task, forge: Forge) -> PhaseResult | None:
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

    @staticmethod
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

    def _release(
        self,
        task: Task,
        forge: Forge,
        worktree: Path,
        branch: str,
        submitted: dict[str, Any],
        context: RoleContext,
    ) -> PhaseResult:
        repository = task.repository
        role = role_for("release")
        if not submitted["merge"]:
            return role.to_phase_result(submitted, context)
        if getattr(settings, "CODEX_RELEASE_REQUIRES_APPROVAL", False):
            return PhaseResult.escalate(
                "the release policy requires a person to approve the merge"
            )
        pull = forge.find_pull_request(branch)
        if pull is None:
            return PhaseResult.failed(f"no pull request for {branch} to merge")
        number = pull["number"]
        if pull["state"] != "merged":
            gone = self._source_issue_gone(task, forge)
            if gone is not None:
                return gone
            if pull["draft"]:
                self._mark_ready(task, forge, branch)
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
            self._close_issue(task, forge, pull["url"])
        with contextlib.suppress(ClassifiedFailure, OSError):
            remove_worktree(mirror_path(repository), worktree, delete_branch=True)
        return role.to_phase_result(submitted, context)
