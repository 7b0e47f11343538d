"""The agent phase runner: a Claude agent does each phase's work in the task's
git worktree (CODEX_PHASE_RUNNER = "agents.phase_runner.AgentPhaseRunner").

The runner owns the frame of every step, the same for each phase: the spend
cap and the task's budget, the model client, the role's agent instance, the
worktree (the repository's mirror under CODEX_MIRROR_ROOT, a worktree under
CODEX_WORKTREE_ROOT/<task_id> on branch codex/<task_id>), the jail and the
repository's setup, the prompt (the request, the documents of earlier phases,
people's messages, the repository's rules and learnings), the agent's run
with its tools, and the record of every tool call. What a phase does beyond
that is its role's (agents.roles.base.Role's hooks): QA runs the checks for
real before its agent, the developer's work is committed, pushed and opened
as a pull request, the release merges at the gate, and so on.

With no ANTHROPIC_API_KEY every phase blocks with NO_KEY_REASON. A task whose
runs have used up its budget (CODEX_TASK_MAX_COST_USD, CODEX_TASK_MAX_TOKENS)
escalates without starting another; a run starts with what the task has left.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.conf import settings

from agents import checkpoints, people, worktree_hygiene
from agents.budgets import Budget, TaskBudget
from agents.check_runs import commands_note
from agents.claude import claude_client
from agents.domain_tools import HUMAN_QUESTIONS, domain_tools
from agents.ecosystems import prepare_environment
from agents.instances import begin_phase_instance, end_phase_instance
from agents.live_output import OutputStream
from agents.prompts import system_blocks
from agents.repo_map.prompt import repository_outline
from agents.roles import Role, RoleContext, role_for
from agents.roles.base import Step, task_prompt
from agents.run_outcome import RunOutcome
from agents.runtime import BUDGET_ESCALATION_CODE, run_agent
from agents.sandbox import Sandbox
from agents.tools import ToolRecord
from codex.fleet.models import RunCheckpoint
from codex.repositories.forge import Forge, get_forge
from codex.tasks.models import Artifact, Learning
from codex.tasks.runners import PhaseResult
from codex.tasks.spend_caps import cap_reached
from integrations.anthropic.client import (
    ModelNotConfigured,
    effort_for,
    thinking_for,
)
from integrations.git import add_worktree, branch_name, ensure_mirror, fast_forward
from integrations.jail import Jail, JailUnavailable

if TYPE_CHECKING:
    from codex.tasks.models import Task

logger = logging.getLogger(__name__)

NO_KEY_REASON = "no agent backend configured: set ANTHROPIC_API_KEY"


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


@dataclass(frozen=True)
class _Frame:
    """What the runner holds through a step, beside the role's Step: the
    model client, the task's budget, the live output of its commands and the
    checkpoint its run resumes (if any)."""

    client: Any
    task_budget: TaskBudget
    output: OutputStream
    checkpoint: RunCheckpoint | None


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
        forge = get_forge(task.repository)
        branch = branch_name(task.task_id)
        step = Step(
            task=task,
            forge=forge,
            branch=branch,
            worktree=prepare_worktree(task, forge, branch),
            context=RoleContext(task=task, branch=branch, client=client),
        )
        settled = role.before_agent(step)
        if settled is not None:
            return settled
        checkpoint = checkpoints.load(task, role.name)
        wait = checkpoints.waiting(checkpoint)
        if wait is not None:
            return PhaseResult.blocked(
                f"the model asked to wait; the run resumes in {wait.seconds + 1}s",
                retry_after=wait,
            )
        frame = _Frame(
            client, task_budget, OutputStream(task.pk, role.name), checkpoint
        )
        try:
            return self._with_sandbox(step, role, frame)
        finally:
            frame.output.close()

    def _with_sandbox(self, step: Step, role: Role, frame: _Frame) -> PhaseResult:
        """The step once the worktree is ready: the jail, the role's
        preparation, the agent's run and what the role makes of it."""
        task = step.task
        not_ready = self._jail(step, role, frame.output)
        if not_ready is not None:
            return not_ready
        step.documents = Artifact.latest_of(task.pk, role.documents)
        prepared = role.prepare(step)
        if isinstance(prepared, PhaseResult):
            return prepared
        outcome = self._agent(step, role, frame, prepared)
        step.context.charge(outcome.metrics)  # answers to questions between roles
        if not role.writes:
            self._reset_after_read_only_run(task, role, step.worktree)
        ended = self._ended_without_result(step, outcome)
        if ended is not None:
            return ended
        result = role.finish(step, outcome.result)
        result.metrics = {**outcome.metrics.as_dict(), **result.metrics}
        return result

    def _agent(
        self, step: Step, role: Role, frame: _Frame, prepared: str
    ) -> RunOutcome:
        """The role's agent at work, from its checkpoint when it has one;
        `prepared` is what the role's `prepare` said."""
        task, sandbox, checkpoint = step.task, step.sandbox, frame.checkpoint
        resume = None
        if checkpoint is not None:
            sandbox.files_changed.update(checkpoint.files_written)
            resume = checkpoints.resume(checkpoint, step.worktree)
            task.record(
                "tool",
                by=f"agent:{role.name}",
                reason=f"run resumed after {checkpoint.turns} turn(s)",
                data={"tool": "resume", "success": True, "turns": checkpoint.turns},
            )
        given: set[int] = set()  # people's messages delivered to this run
        saver = checkpoints.Saver(task, role.name, step.worktree, sandbox.files_changed)
        outcome = run_agent(
            frame.client,
            system=self._system(step, role),
            prompt=self._prompt(step, role, prepared, given),
            result_schema=role.result_schema(step),
            tools=[
                *sandbox.tools(read_only=not role.writes),
                *domain_tools(step.context),
                *role.tools(step),
            ],
            budget=frame.task_budget.apply(Budget.from_settings(role.name)),
            on_tool=lambda record: self._record_tool(task, role, record),
            thinking=thinking_for(role.name),
            effort=effort_for(role.name),
            # A person's message sent meanwhile reaches the very next turn.
            interjection=lambda: people.steering_between_turns(task, role.name, given),
            review_submission=lambda result: role.check_submission(step, result),
            checkpoint=saver,
            resume=resume,
        )
        kept = checkpoint is not None or saver.saved
        checkpoints.settle(task, role.name, outcome, kept=kept)
        return outcome

    @staticmethod
    def _jail(step: Step, role: Role, output: OutputStream) -> PhaseResult | None:
        """The step's sandbox: the worktree in the jail, the repository's
        setup run; an escalation when commands cannot run there. `output`
        takes the commands' output as it comes, for the live page."""
        repository = step.repository
        try:
            jail = Jail.for_worktree(
                step.worktree,
                image=repository.sandbox_image,
                worktree_quota_mb=repository.worktree_quota_mb,
            )
        except JailUnavailable as exc:
            # No silent fallback to running unjailed: a person must fix this.
            return PhaseResult.escalate(
                f"agents' commands cannot run: {exc.reason}. Fix: {exc.fix}"
            )
        # The repository's setup, or what its files call for when it names
        # none (agents.ecosystems); the jail it returns carries its variables.
        jail, not_ready = prepare_environment(repository, jail)
        if not_ready:
            return PhaseResult.escalate(not_ready)
        step.sandbox = Sandbox(
            step.worktree,
            jail=jail,
            allowed_commands=repository.allowed_commands,
            role=role.name,
            on_output=output,
        )
        # The files the developer's tools wrote: only new files among them
        # are committed (agents.worktree_hygiene).
        step.context.extra["intended_files"] = step.sandbox.files_changed
        return None

    @staticmethod
    def _system(step: Step, role: Role) -> list[dict[str, Any]]:
        """The role's system prompt, the repository's learnings and rules."""
        learnings = [
            f"({learning.type}) {learning.content}"
            for learning in Learning.objects.for_prompt(step.repository)
        ]
        return [
            *system_blocks(role.system_prompt, learnings=learnings),
            *people.rules_block(step.task, step.worktree, role.name),
        ]

    @staticmethod
    def _prompt(step: Step, role: Role, prepared: str, given: set[int]) -> str:
        """The first message: people's messages and their answers to this
        phase's escalations first, fenced as human input (docs/gates.md),
        then the request, the documents and what to do."""
        # Every role knows how the repository checks a change.
        extra = "\n\n".join(
            part
            for part in (
                repository_outline(step) if role.sees_map else "",
                prepared,
                commands_note(step.repository),
            )
            if part
        )
        prompt = task_prompt(
            step.task,
            documents=step.documents,
            instructions=f"{extra}\n\n{role.run_instructions(step)}".strip(),
        )
        people_said = [
            people.steering_prompt(step.task, role.name, given),
            people.answers_prompt(step.task, role.name),
        ]
        return "\n\n".join([*(part for part in people_said if part), prompt])

    @staticmethod
    def _ended_without_result(step: Step, outcome: RunOutcome) -> PhaseResult | None:
        """The step's end when the run gives the role nothing to finish: a
        question to a person (ask_question(to="human"): a person answers
        before work goes on), or the run's own stop reason."""
        questions = step.context.extra.get(HUMAN_QUESTIONS)
        if questions:
            escalation = PhaseResult.escalate(
                "the agent asked a person",
                questions=list(questions),
                code="needs_clarification",
            )
            escalation.metrics = outcome.metrics.as_dict()
            return escalation
        if not outcome.ok or outcome.result is None:
            return outcome.phase_result()
        return None

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
