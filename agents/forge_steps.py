"""The forge-facing steps of the agent phase runner (agents.phase_runner):
what the runner does on the task's forge around the agents, kept apart from
the runner's own work of preparing and running a role.

- implementation: commit what is left, push the branch, open the pull
  request as a draft (perform_once) and apply the CI policy (_ci_policy);
  recheck_ci reads a pending CI state again without the agent;
- mark_ready: a verified draft pull request becomes ready for review;
- release: merge the pull request at the verified head sha (perform_once) and
  close the task's issue (_close_issue); a deleted source issue withdraws the
  request (_source_issue_gone);
- post_review: the reviewer's comments as one review per cycle.
"""

from __future__ import annotations

import contextlib
import re
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.utils.dateparse import parse_datetime

from agents import gate_steps, worktree_hygiene
from agents.roles import Role, RoleContext, reviewer, role_for
from codex.claims.models import IssueClaim
from codex.core.errors import ClassifiedFailure
from codex.core.side_effects import SideEffectUncertain, perform_once, settle
from codex.tasks.runners import PhaseResult
from integrations.git import (
    commit_all,
    head_sha,
    mirror_path,
    push,
    remove_worktree,
    run_git,
)
from integrations.github.forge import IssueGone

if TYPE_CHECKING:
    from codex.repositories.forge import Forge
    from codex.tasks.models import Task

# CI states a commit may have. "pending" waits and checks again (ci_policy);
# "none" (no checks at all) passes on the local forge, which runs no CI, and on
# GitHub as CODEX_CI_NONE_PASSES says.
CI_PASSING = {"success": True, "failure": False, "error": False}
CI_PENDING = re.compile(
    r"^CI pending on (?P<sha>[0-9a-f]{7,64}) \((?P<done>\d+) of (?P<total>\d+) "
    r"tasks done\)"
)


# -- implementation -----------------------------------------------------------


def implementation(
    task: Task,
    role: Role,
    forge: Forge,
    worktree: Path,
    branch: str,
    submitted: dict[str, Any],
    context: RoleContext,
) -> PhaseResult:
    repository = task.repository
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
    gone = _source_issue_gone(task, forge)
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
    return _ci_policy(task, result, forge.checks_state(current), current)


def _ci_policy(task: Task, result: PhaseResult, state: str, sha: str) -> PhaseResult:
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


def recheck_ci(
    task: Task, forge: Forge, worktree: Path, branch: str
) -> PhaseResult | None:
    """The step after a "CI pending" block: when the task's last error
    since entering the phase is that block and the worktree is still at
    the pushed sha, only the CI state is read again (no agent, no cost).
    None: run the developer as usual."""
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
    return _ci_policy(task, result, forge.checks_state(sha), sha)


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


# -- release ------------------------------------------------------------------


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


def release(
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
    if getattr(settings, "CODEX_RELEASE_REQUIRES_APPROVAL", False) and not (
        _merged_already(forge, branch)
    ):
        # A pull request merged already (a parent's analysis merged a child's,
        # docs/children.md) has nothing left to approve: release settles it.
        return PhaseResult.escalate(
            "the release policy requires a person to approve the merge"
        )
    # The repository's merge gate, checked again at the merge (docs/gates.md).
    waiting = gate_steps.merge_gate(task, forge, branch)
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
        gone = _source_issue_gone(task, forge)
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


# -- intake -------------------------------------------------------------------


def after_triage(task: Task, forge: Forge, context: RoleContext) -> None:
    """The triage on the issue: its labels added, and when the product manager
    declined the request, a comment saying why (each at most once). A forge
    failure here is recorded and does not undo the triage."""
    if not task.issue_number:
        return
    labels = context.extra.get("labels") or []
    declined = context.extra.get("declined") or ""
    repository, issue = task.repository, task.issue_number
    try:
        if labels:
            perform_once(
                f"issue:labels:{repository.pk}:{issue}:{task.task_id}",
                lambda: (forge.add_labels(issue, list(labels)), {"labels": labels})[1],
                lookup=lambda: None,  # adding labels again changes nothing
                task=task,
                kind="issue",
            )
            task.record(
                "tool",
                by="agent:product_manager",
                reason=f"labels added to issue #{issue}: {', '.join(labels)}",
                data={"tool": "add_labels", "success": True, "labels": labels},
            )
        if declined:
            marker = f"<!-- codex:declined:{task.task_id} -->"
            body = (
                "Codex will not work on this request: "
                f"{reviewer.inert(declined)}\n\n{marker}"
            )
            perform_once(
                f"issue:declined:{repository.pk}:{issue}:{task.task_id}",
                lambda: dict(forge.comment(issue, body)),
                lookup=lambda: (
                    None
                    if (found := forge.find_comment(issue, marker)) is None
                    else dict(found)
                ),
                task=task,
                kind="issue",
            )
    except (ClassifiedFailure, SideEffectUncertain, IssueGone) as exc:
        task.record(
            "tool",
            by="agent:product_manager",
            reason=f"the triage could not be put on the issue: {exc}"[:2000],
            data={"tool": "add_labels", "success": False},
        )


# -- review -------------------------------------------------------------------


def post_review(task: Task, forge: Forge, branch: str, review: dict[str, Any]) -> None:
    """Post the reviewer's comments on the open pull request as one review,
    once per review cycle (perform_once, found again by its marker), when
    CODEX_REVIEW_POST_COMMENTS is on and there are comments. Posting is a
    courtesy to the people watching the pull request: a failure is
    recorded on the task and does not undo the review, whose report is
    the record the pipeline acts on."""
    if not getattr(settings, "CODEX_REVIEW_POST_COMMENTS", True):
        return
    if not review.get("comments"):
        return
    cycle = task.review_cycles + 1
    body = reviewer.review_body(task.task_id, cycle, review)
    marker = reviewer.review_marker(task.task_id, cycle)
    try:
        pull = forge.find_pull_request(branch)
        if pull is None or pull["state"] != "open":
            return
        number = pull["number"]
        posted = perform_once(
            f"pr:review:{task.repository.pk}:{number}:{task.task_id}:{cycle}",
            lambda: dict(forge.post_review(number, body)),
            lookup=lambda: (
                dict(found) if (found := forge.find_review(number, marker)) else None
            ),
            task=task,
            kind="comment",
        )
    except (ClassifiedFailure, SideEffectUncertain) as exc:
        task.record(
            "tool",
            by="agent:reviewer",
            reason=f"review comments not posted: {exc}"[:2000],
            data={"tool": "post_review", "success": False, "cycle": cycle},
        )
        return
    task.record(
        "tool",
        by="agent:reviewer",
        reason=f"review comments posted: {posted.get('url', '')}",
        data={
            "tool": "post_review",
            "success": True,
            "cycle": cycle,
            "comment": posted.get("id"),
        },
    )
