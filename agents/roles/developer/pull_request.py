"""The developer's work on the forge once it submits: what is left is
committed, the branch pushed, the pull request opened as a draft (once,
found again by its branch) and the CI policy applied; and, on the step after
a "CI pending" wait, the CI state read again without the agent."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.utils.dateparse import parse_datetime

from agents import worktree_hygiene
from agents.forge_steps import source_issue_gone
from codex.core.store import perform_once
from codex.tasks.runners import PhaseResult
from integrations.git import commit_all, head_sha, push, run_git

if TYPE_CHECKING:
    from agents.roles.base import Role, Step
    from codex.tasks.models import Task

# CI states a commit may have. "pending" waits and checks again (ci_policy);
# "none" (no checks at all) passes on the local forge, which runs no CI, and on
# GitHub as CODEX_CI_NONE_PASSES says.
CI_PASSING = {"success": True, "failure": False, "error": False}
CI_PENDING = re.compile(
    r"^CI pending on (?P<sha>[0-9a-f]{7,64}) \((?P<done>\d+) of (?P<total>\d+) "
    r"tasks done\)"
)


def ship(step: Step, role: Role, submitted: dict[str, Any]) -> PhaseResult:
    """Commit what is left, push, open the draft pull request and apply the
    CI policy to the pushed head; `role` reads the submitted result."""
    task, forge, worktree, branch = step.task, step.forge, step.worktree, step.branch
    context, repository = step.context, step.repository
    # Only what the developer meant to change ships (agents.worktree_hygiene).
    dropped = worktree_hygiene.drop_scratch(
        worktree, context.extra.get("intended_files") or ()
    )
    if dropped:
        task.record(
            "tool",
            by=f"agent:{role.name}",
            reason=f"removed {len(dropped)} scratch file(s) before the commit",
            data={"tool": "drop_scratch", "success": True, "files": dropped},
        )
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
        return PhaseResult.escalate("the developer submitted without changing any file")
    # A rebase onto someone else's push to the branch rewrites our commits.
    push(worktree, branch, forge.git_credentials())
    gone = source_issue_gone(task, forge)
    if gone is not None:
        return gone
    # Every commit of the branch: the per-task recovery points and the last
    # one, as pushed (after any rebase).
    commits = run_git(
        ["rev-list", "--reverse", f"origin/{repository.default_branch}..HEAD"],
        worktree,
    ).split()
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
    # The writer's record: what the branch changes, file by file.
    context.extra["changes"] = run_git(
        ["diff", "--name-status", f"origin/{repository.default_branch}...HEAD"],
        worktree,
    )
    result = role.to_phase_result(submitted, context)
    result.commits = commits
    result.branch = branch
    result.pr_url = pull["url"]
    current = head_sha(worktree)
    return ci_policy(task, result, forge.checks_state(current), current)


def ci_policy(task: Task, result: PhaseResult, state: str, sha: str) -> PhaseResult:
    """`result` with the CI state of the pushed head `sha` applied:

    - success → passing; failure or error → not passing;
    - pending, with every task done → blocked for
      CODEX_CI_PENDING_RETRY_SECONDS and checked again then (without
      running the agent, see recheck_ci); at most CODEX_MAX_RETRIES
      times, after which the pipeline escalates (retry limit);
    - none (no checks configured): passing on the local forge; on GitHub
      passing when CODEX_CI_NONE_PASSES is on (the default), else, with
      every task done, an escalation: a person decides.

    With tasks still to do, pending and none leave ci_passing unknown:
    the next step continues the work and looks again."""
    done = result.current_task or 0
    finished = task.total_tasks > 0 and done >= task.total_tasks
    if state == "pending" and finished:
        seconds = int(getattr(settings, "CODEX_CI_PENDING_RETRY_SECONDS", 300))
        blocked = PhaseResult.blocked(
            f"CI pending on {sha} ({done} of {task.total_tasks} tasks done); "
            f"checking again in {seconds}s",
            retry_after=timedelta(seconds=seconds),
        )
        blocked.metrics = result.metrics
        return blocked
    if state == "none":
        if task.repository.is_local or getattr(settings, "CODEX_CI_NONE_PASSES", True):
            result.ci_passing = True
        elif finished:
            escalation = PhaseResult.escalate(
                f"no CI checks reported for {sha[:12]} and CODEX_CI_NONE_PASSES "
                "is off: a person decides whether the change goes on without CI"
            )
            escalation.metrics = result.metrics
            return escalation
        else:
            result.ci_passing = None
        return result
    result.ci_passing = CI_PASSING.get(state)
    return result


def recheck_ci(step: Step) -> PhaseResult | None:
    """The step after a "CI pending" block: when the task's last error
    since entering the phase is that block and the worktree is still at
    the pushed sha, only the CI state is read again (no agent, no cost).
    None: run the developer as usual."""
    task, forge, worktree, branch = step.task, step.forge, step.worktree, step.branch
    last = task.errors[-1] if task.errors else None
    if not last or last.get("phase") != "implementation":
        return None
    waiting = CI_PENDING.match(last.get("message") or "")
    at = parse_datetime(last.get("timestamp") or "")
    if waiting is None or at is None or at < task.phase_entered_at:
        return None
    sha = waiting["sha"]
    if head_sha(worktree) != sha or run_git(["status", "--porcelain"], worktree):
        return None
    pull = forge.find_pull_request(branch)
    if pull is None or pull["state"] != "open" or pull["head_sha"] != sha:
        return None
    base = f"origin/{task.repository.default_branch}"
    result = PhaseResult(
        current_task=min(int(waiting["done"]), task.total_tasks),
        commits=run_git(["rev-list", "--reverse", f"{base}..HEAD"], worktree).split(),
        branch=branch,
        pr_url=pull["url"],
    )
    task.record(
        "tool",
        by="agent:developer",
        reason=f"CI re-checked on {sha[:12]}",
        data={"tool": "ci_check", "success": True, "sha": sha},
    )
    return ci_policy(task, result, forge.checks_state(sha), sha)
