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

The forge-facing work of these phases (pushes, pull requests, CI, merges,
issues, review comments) is in agents.forge_steps.

With no ANTHROPIC_API_KEY every phase blocks with NO_KEY_REASON. A task whose
runs have used up its budget (CODEX_TASK_MAX_COST_USD, CODEX_TASK_MAX_TOKENS)
escalates without starting another; a run starts with what the task has left.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.conf import settings

from agents import (
    baseline,
    forge_steps,
    gate_steps,
    people,
    review_inputs,
    worktree_hygiene,
)
from agents import feedback as feedback_loop
from agents.budgets import Budget, TaskBudget
from agents.claude import claude_client
from agents.domain_tools import HUMAN_QUESTIONS, domain_tools
from agents.instances import begin_phase_instance, end_phase_instance
from agents.prompts import system_blocks
from agents.roles import Role, RoleContext, developer, qa, role_for
from agents.roles.base import task_prompt
from agents.runtime import BUDGET_ESCALATION_CODE, run_agent
from agents.sandbox import Sandbox
from agents.setup import ensure_setup
from agents.tools import Tool, ToolRecord
from codex.repositories.forge import Forge, get_forge
from codex.tasks.models import Artifact, Learning
from codex.tasks.runners import PhaseResult
from codex.tasks.spend_caps import cap_reached
from integrations.anthropic.client import (
    ModelNotConfigured,
    effort_for,
    thinking_for,
)
from integrations.git import (
    add_worktree,
    branch_name,
    committed_steps,
    ensure_mirror,
    fast_forward,
)
from integrations.jail import Jail, JailUnavailable

if TYPE_CHECKING:
    from codex.repositories.models import Repository
    from codex.tasks.models import Task

logger = logging.getLogger(__name__)

NO_KEY_REASON = "no agent backend configured: set ANTHROPIC_API_KEY"
DOCUMENTS = {
    "intake": (),
    "planning": ("spec.md",),
    "implementation": ("spec.md", "plan.md", "tasks.md", "analysis.json"),
    "verification": ("spec.md", "plan.md", "tasks.md"),
    "review": ("spec.md", "plan.md", feedback_loop.RESPONSES_DOCUMENT),
    "release": ("spec.md",),
}


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


class AgentPhaseRunner:
    """Runs the current phase of a task with its role's agent."""

    def run(self, task: Task) -> PhaseResult:
        role = role_for(task.phase)
        capped = cap_reached(task.repository)
        if capped:
            # A monthly spend cap: wait until it is raised (docs/gates.md).
            return PhaseResult.awaiting(capped, kind="spend", mode="cap")
        # Read once: nothing charges the task before the run starts.
        task_budget = TaskBudget.of(task)
        spent = task_budget.exhausted()
        if spent:
            # The task's runs used up its budget: a person raises it or stops.
            return PhaseResult.escalate(spent, code=BUDGET_ESCALATION_CODE)
        try:
            client = claude_client(role=role.name)
        except ModelNotConfigured:
            return PhaseResult.blocked(NO_KEY_REASON)
        # The run works through the role's agent instance
        # (docs/domain/fleet.md#agent-instance); a step that
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
            awaited = forge_steps.recheck_ci(task, forge, worktree, branch)
            if awaited is not None:
                return awaited
        if role.phase == "release":
            # The merge gate before the release manager's run (docs/gates.md).
            waiting = gate_steps.merge_gate(task, forge, branch)
            if waiting is not None:
                return waiting
        try:
            jail = Jail.for_worktree(worktree, image=repository.sandbox_image)
        except JailUnavailable as exc:
            # No silent fallback to running unjailed: a person must fix this.
            return PhaseResult.escalate(
                f"agents' commands cannot run: {exc.reason}. Fix: {exc.fix}"
            )
        not_ready = ensure_setup(jail, repository.setup_command, repository.setup_hosts)
        if not_ready:
            return PhaseResult.escalate(not_ready)
        sandbox = Sandbox(
            worktree, jail=jail, allowed_commands=repository.allowed_commands
        )
        context = RoleContext(task=task, branch=branch, client=client)
        # The files the developer's tools wrote: only new files among them
        # are committed (agents.worktree_hygiene).
        context.extra["intended_files"] = sandbox.files_changed
        writes = role.phase == "implementation"
        extra = ""
        if role.phase == "verification":
            extra = self._run_checks(sandbox, context, repository)
            unrunnable = qa.unrunnable(context.checks)
            if unrunnable:
                # A configuration problem no developer can fix: ask a person.
                return PhaseResult.escalate(unrunnable)
            # What already fails on the base is not the change's.
            context.extra["baseline"] = baseline.for_task(worktree, repository)
            extra = "\n\n".join(
                part
                for part in (
                    extra,
                    baseline.note(context.extra["baseline"]),
                    self._diff(worktree, repository),
                )
                if part
            )
        elif role.phase == "review":
            extra = self._diff(worktree, repository)
            results = review_inputs.qa_results(task)
            if results:
                extra = f"{extra}\n\n{results}"
        elif role.phase == "planning":
            extra = people.plan_feedback(task)
        documents = Artifact.latest_of(task.pk, DOCUMENTS[role.phase])
        schema = role.schema
        if role.phase == "implementation":
            feedback = feedback_loop.latest(task)
            if feedback is not None:
                context.extra["feedback"] = feedback
            extra = self._committed_tasks(task, worktree, context, documents)
            if feedback is not None:
                # The findings come first; the developer answers each by id.
                extra = f"{feedback_loop.feedback_prompt(feedback)}\n\n{extra}"
                schema = feedback_loop.responses_schema(schema, feedback.ids)
        # Every role knows how the repository checks a change.
        extra = f"{extra}\n\n{qa.commands_note(repository)}".strip()
        instructions = role.instructions
        if "feedback" in context.extra:
            instructions = developer.FEEDBACK_INSTRUCTIONS
        prompt = task_prompt(
            task,
            documents=documents,
            instructions=f"{extra}\n\n{instructions}".strip(),
        )
        # People's messages come first, fenced as human input (docs/gates.md).
        given: set[int] = set()
        steering = people.steering_prompt(task, role.name, given)
        if steering:
            prompt = f"{steering}\n\n{prompt}"
        learnings = [
            f"({learning.type}) {learning.content}"
            for learning in Learning.objects.for_prompt(repository)
        ]
        outcome = run_agent(
            client,
            system=[
                *system_blocks(role.system_prompt, learnings=learnings),
                *people.rules_block(task, worktree, role.name),
            ],
            prompt=prompt,
            result_schema=schema,
            tools=[
                *sandbox.tools(read_only=not writes),
                *domain_tools(context),
                *self._role_tools(task, role, worktree, context),
            ],
            budget=task_budget.apply(Budget.from_settings(role.name)),
            on_tool=lambda record: self._record_tool(task, role, record),
            thinking=thinking_for(role.name),
            effort=effort_for(role.name),
            # A person's message sent meanwhile reaches the very next turn.
            interjection=lambda: people.steering_between_turns(task, role.name, given),
        )
        context.charge(outcome.metrics)  # answers to questions between roles
        if not writes:
            self._reset_after_read_only_run(task, role, worktree)
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
            result = forge_steps.implementation(
                task, role, forge, worktree, branch, submitted, context
            )
        elif role.phase == "release":
            result = forge_steps.release(
                task, forge, worktree, branch, submitted, context
            )
        else:
            result = role.to_phase_result(submitted, context)
            if (
                role.phase == "verification"
                and result.verification
                and result.verification.get("recommendation") == "approve"
            ):
                forge_steps.mark_ready(task, forge, branch)
            if role.phase == "review" and result.review:
                forge_steps.post_review(task, forge, branch, result.review)
            if role.phase == "intake":
                forge_steps.after_triage(task, forge, context)
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
        """The change for QA and the reviewer (agents.review_inputs)."""
        return review_inputs.diff_prompt(
            worktree, f"origin/{repository.default_branch}"
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
        return developer.progress_note(
            items, committed, feedback="feedback" in context.extra
        )

    @staticmethod
    def _role_tools(
        task: Task, role: Role, worktree: Path, context: RoleContext
    ) -> list[Tool]:
        """Tools of one role: the developer's commit_task (a commit per
        finished task, recorded as a commit tool event) and review_changes;
        QA's and the reviewer's read_diff."""
        if role.phase in ("verification", "review"):
            return [review_inputs.diff_tool(worktree, review_inputs.base_ref(task))]
        if role.phase != "implementation":
            return []

        def recorded(sha: str, item: developer.TaskItem) -> None:
            task.record(
                "tool",
                by=f"agent:{role.name}",
                reason=f"commit {sha[:12]} ({item.id})",
                data={"tool": "commit", "success": True, "sha": sha, "step": item.id},
            )

        intended = context.extra["intended_files"]
        return [
            developer.commit_tool(
                worktree,
                task.task_id,
                context.extra.get("task_items") or [],
                context.extra.setdefault("committed_steps", {}),
                recorded,
                intended,
            ),
            developer.changes_tool(
                worktree, f"origin/{task.repository.default_branch}", intended
            ),
        ]

    @staticmethod
    def _reset_after_read_only_run(task: Task, role: Role, worktree: Path) -> None:
        """A role without write tools leaves the worktree as it found it:
        whatever its shell changed is undone (and recorded), so the
        developer's next commit never sweeps it up."""
        changed = worktree_hygiene.reset(worktree)
        if changed:
            task.record(
                "tool",
                by=f"agent:{role.name}",
                reason=f"reset {len(changed)} change(s) left by the {role.name}'s "
                "run (this role does not change files)",
                data={"tool": "reset_worktree", "success": True, "changed": changed},
            )
