"""The agent phase runner: a Claude agent does each phase's work in the task's
git worktree (CODEX_PHASE_RUNNER = "agents.phase_runner.AgentPhaseRunner").

For every step it picks the role of the task's phase (agents.roles), prepares
the worktree (the repository's mirror under CODEX_MIRROR_ROOT, a worktree under
CODEX_WORKTREE_ROOT/<task_id> on branch codex/<task_id>), runs the role's agent
in a Sandbox of that worktree, and turns the submitted result into a
PhaseResult. Around the agent, the runner does what must not be left to a
model:

- implementation: tells the developer which tasks.md items are already
  committed on the branch and gives it commit_task (one commit per finished
  item, the recovery point); commits what is left (commit_all), pushes the
  branch, opens the pull request as a draft (perform_once, looked up with
  find_pull_request) and applies the CI policy (_ci_policy: pending waits and
  is checked again without the agent; none passes on the local forge, and on
  GitHub as CODEX_CI_NONE_PASSES says);
- verification: runs the repository's test, lint and type-check commands for
  real in the sandbox before the agent starts (agents.roles.qa); the real
  runs' counts, failures and outcomes go into the report and overrule the
  agent; an approved verification marks the pull request ready for review;
- review: gives the reviewer the diff against the base branch, and posts its
  comments on the pull request as one review per cycle
  (CODEX_REVIEW_POST_COMMENTS);
- release: merges the pull request at the verified head sha (perform_once) and
  closes the task's issue.

With no ANTHROPIC_API_KEY every phase blocks with NO_KEY_REASON. A task whose
runs have used up its budget (CODEX_TASK_MAX_COST_USD, CODEX_TASK_MAX_TOKENS)
escalates without starting another; a run starts with what the task has left.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.utils.dateparse import parse_datetime

from agents.domain_tools import HUMAN_QUESTIONS, domain_tools
from agents.instances import begin_phase_instance, end_phase_instance
from agents.prompts import system_blocks, untrusted
from agents.roles import Role, RoleContext, developer, qa, reviewer, role_for
from agents.roles.base import task_prompt
from agents.runtime import BUDGET_ESCALATION_CODE, Budget, TaskBudget, run_agent
from agents.tools import Sandbox, Tool, ToolRecord
from codex.claims.models import IssueClaim
from codex.core.errors import ClassifiedFailure
from codex.core.side_effects import SideEffectUncertain, perform_once
from codex.repositories.forge import Forge, get_forge
from codex.tasks.models import Learning
from codex.tasks.runners import PhaseResult
from integrations.anthropic.client import ModelNotConfigured, model_client
from integrations.git import (
    add_worktree,
    branch_name,
    commit_all,
    committed_steps,
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
DIFF_CHARS = 60_000
DOCUMENTS = {
    "intake": (),
    "planning": ("spec.md",),
    "implementation": ("spec.md", "plan.md", "tasks.md", "analysis.json"),
    "verification": ("spec.md", "tasks.md"),
    "review": ("spec.md", "plan.md"),
    "release": ("spec.md",),
}
# CI states a commit may have. "pending" waits and checks again (ci_policy);
# "none" (no checks at all) passes on the local forge, which runs no CI, and on
# GitHub as CODEX_CI_NONE_PASSES says.
CI_PASSING = {"success": True, "failure": False, "error": False}
CI_PENDING = re.compile(
    r"^CI pending on (?P<sha>[0-9a-f]{7,64}) \((?P<done>\d+) of (?P<total>\d+) "
    r"tasks done\)"
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
    """The newest content of each named artifact the task has, in one query
    (a document is stored again only when a phase is redone, so older
    versions are few)."""
    if not names:
        return {}
    documents: dict[str, str] = {}
    newest_first = task.artifacts.filter(name__in=names).order_by(
        "name", "-created_at", "-id"
    )
    for name, content in newest_first.values_list("name", "content"):
        documents.setdefault(name, content)
    return {name: documents[name] for name in names if name in documents}


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
        # Read once: nothing charges the task before the run starts.
        task_budget = TaskBudget.of(task)
        spent = task_budget.exhausted()
        if spent:
            # The task's runs used up its budget: a person raises it or stops.
            return PhaseResult.escalate(spent, code=BUDGET_ESCALATION_CODE)
        try:
            client = model_client(role=role.name)
        except ModelNotConfigured:
            return PhaseResult.blocked(NO_KEY_REASON)
        # The run works through the role's agent instance (spec 004); a step that
        # raises leaves it for the retry (advance_task blocks the task).
        try:
            instance = begin_phase_instance(
                task,
                worktree=str(worktree_path(task)),
                branch=branch_name(task.task_id),
                system_prompt=role.system_prompt,
            )
            result = self._run(task, role, client, task_budget)
        finally:
            client.close()
        end_phase_instance(instance, task, result)
        return result

    # -- the step -----------------------------------------------------------

    def _run(
        self,
        task: Task,
        role: Role,
        client: Any,
        task_budget: TaskBudget | None = None,
    ) -> PhaseResult:
        """The step's work; `task_budget` is what `run` read (else read here)."""
        if task_budget is None:
            task_budget = TaskBudget.of(task)
        repository = task.repository
        forge = get_forge(repository)
        branch = branch_name(task.task_id)
        worktree = prepare_worktree(task, forge, branch)
        if role.phase == "implementation":
            awaited = self._recheck_ci(task, forge, worktree, branch)
            if awaited is not None:
                return awaited
        sandbox = Sandbox(
            worktree,
            path=getattr(settings, "CODEX_SANDBOX_PATH", None) or None,
            extra_env=getattr(settings, "CODEX_SANDBOX_ENV", None) or {},
        )
        context = RoleContext(task=task, branch=branch, client=client)
        extra = ""
        if role.phase == "verification":
            extra = self._run_checks(sandbox, context, repository)
            unrunnable = qa.unrunnable(context.checks)
            if unrunnable:
                # A configuration problem no developer can fix: ask a person.
                return PhaseResult.escalate(unrunnable)
        elif role.phase == "review":
            extra = self._diff(worktree, repository)
        documents = latest_documents(task, DOCUMENTS[role.phase])
        if role.phase == "implementation":
            extra = self._committed_tasks(task, worktree, context, documents)
        prompt = task_prompt(
            task,
            documents=documents,
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
            tools=[
                *sandbox.tools(),
                *domain_tools(context),
                *self._role_tools(task, role, worktree, context),
            ],
            budget=task_budget.apply(Budget.from_settings()),
            on_tool=lambda record: self._record_tool(task, role, record),
        )
        context.charge(outcome.metrics)  # answers to questions between roles
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
            if role.phase == "review" and result.review:
                self._post_review(task, forge, branch, result.review)
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
    def _run_checks(
        sandbox: Sandbox, context: RoleContext, repository: Repository
    ) -> str:
        """Run the repository's test, lint and type-check commands for real
        (agents.roles.qa); the results go to the role and into the prompt."""
        context.checks = qa.run_checks(sandbox, repository)
        return qa.checks_prompt(context.checks)

    @staticmethod
    def _diff(worktree: Path, repository: Repository) -> str:
        diff = run_git(["diff", f"origin/{repository.default_branch}...HEAD"], worktree)
        if len(diff) > DIFF_CHARS:
            diff = diff[:DIFF_CHARS] + f"\n[diff cut at {DIFF_CHARS} characters]"
        return "The pull request's diff:\n" + untrusted("pull request diff", diff)

    @staticmethod
    def _post_review(
        task: Task, forge: Forge, branch: str, review: dict[str, Any]
    ) -> None:
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
                    dict(found)
                    if (found := forge.find_review(number, marker))
                    else None
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

    # -- implementation -----------------------------------------------------

    @staticmethod
    def _committed_tasks(
        task: Task, worktree: Path, context: RoleContext, documents: dict[str, str]
    ) -> str:
        """The tasks.md items already committed on the branch (their
        `Codex-Step` trailers), for the developer's prompt and tool."""
        tasks_md = documents.get("tasks.md", "")
        items = developer.task_items(tasks_md)
        committed = committed_steps(
            worktree, f"origin/{task.repository.default_branch}", task.task_id
        )
        context.extra["task_items"] = items
        context.extra["committed_steps"] = committed
        return developer.progress_note(items, committed)

    @staticmethod
    def _role_tools(
        task: Task, role: Role, worktree: Path, context: RoleContext
    ) -> list[Tool]:
        """Tools of one role: the developer's commit_task (a commit per
        finished task, recorded as a commit tool event)."""
        if role.phase != "implementation":
            return []

        def recorded(sha: str, item: developer.TaskItem) -> None:
            task.record(
                "tool",
                by=f"agent:{role.name}",
                reason=f"commit {sha[:12]} ({item.id})",
                data={"tool": "commit", "success": True, "sha": sha, "step": item.id},
            )

        return [
            developer.commit_tool(
                worktree,
                task.task_id,
                context.extra.get("task_items") or [],
                context.extra.setdefault("committed_steps", {}),
                recorded,
            )
        ]

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
        # A rebase onto someone else's push to the branch rewrites our commits.
        push(worktree, branch, forge.git_credentials())
        gone = self._source_issue_gone(task, forge)
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
        result = role.to_phase_result(submitted, context)
        result.commits = commits
        result.branch = branch
        result.pr_url = pull["url"]
        current = head_sha(worktree)
        return self._ci_policy(task, result, forge.checks_state(current), current)

    @staticmethod
    def _ci_policy(
        task: Task, result: PhaseResult, state: str, sha: str
    ) -> PhaseResult:
        """`result` with the CI state of the pushed head `sha` applied:

        - success → passing; failure or error → not passing;
        - pending, with every task done → blocked for
          CODEX_CI_PENDING_RETRY_SECONDS and checked again then (without
          running the agent, see _recheck_ci); at most CODEX_MAX_RETRIES
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
            if task.repository.is_local or getattr(
                settings, "CODEX_CI_NONE_PASSES", True
            ):
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

    def _recheck_ci(
        self, task: Task, forge: Forge, worktree: Path, branch: str
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
            commits=run_git(
                ["rev-list", "--reverse", f"{base}..HEAD"], worktree
            ).split(),
            branch=branch,
            pr_url=pull["url"],
        )
        task.record(
            "tool",
            by="agent:developer",
            reason=f"CI re-checked on {sha[:12]}",
            data={"tool": "ci_check", "success": True, "sha": sha},
        )
        return self._ci_policy(task, result, forge.checks_state(sha), sha)

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
