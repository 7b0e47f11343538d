"""What every role shares: the Role (its prompt and schema, and the hooks
through which it does its phase's own work around the agent), the Step the
phase runner prepares for it, the context a role's result is read in, and the
task description every first prompt starts with."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agents.prompts import untrusted
from integrations.anthropic.client import Usage

if TYPE_CHECKING:
    from agents.sandbox import Sandbox
    from agents.tools import Tool
    from codex.repositories.forge import Forge
    from codex.repositories.models import Repository
    from codex.tasks.models import Task
    from codex.tasks.runners import PhaseResult

COMMON_RULES = """\
You work inside the task's git worktree through tools: list_files and search
(paged: ask for the next offset), read_file (a line range of a large file),
bash and, for the developer only, write_file, edit_file, multi_edit (many
edits to one file at once), delete_file and move_file, which answer with the
changed lines and a syntax check (every other role reads and checks; whatever
its shell changes is reset after its run). A long command (a build, a whole
test suite) may ask bash for a longer timeout. bash is a shell in an isolated
jail: the worktree is the current folder and the only writable place, there
is no network and no secret, git is not available: Codex commits for you.
Where a repository restricts commands, run_command replaces bash (its listed
programs only, no shell). Paths are relative to the worktree root. Work in
small, checked steps. When you are done, call submit_result exactly once with an object
matching its schema; nothing you do is recorded until then.

Tools for talking to the team:
- record_learning(type, content): keep something later tasks on this
  repository should know (a convention, a pitfall, a command that works);
  type is a short slug such as pattern_discovered.
- ask_question(to, question): ask another role of the team (product_manager,
  planner, developer, qa, reviewer, release). That role's agent answers at
  once from the task's documents and the answer is the tool's result; a few
  questions per run at most, so ask only what the documents do not say.
  to=human asks a person and stops this phase until they answer: use it only
  when you cannot go on.
- QA and the reviewer have send_feedback(feedback): a note for the developer
  whose work you check (your findings themselves go in your result)."""


@dataclass
class RoleContext:
    """What the phase runner knows when it reads a role's result."""

    task: Task
    branch: str = ""
    # verification: the repository's test, lint and type-check commands, run
    # for real before the agent starts (agents.roles.qa.CheckRun)
    checks: list[Any] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)
    # The run's model client (questions between roles are answered through it)
    # and what those side calls used, added to the run's metrics by `charge`.
    client: Any = None
    side_usage: Usage = field(default_factory=Usage)
    side_cost_usd: Decimal = Decimal(0)
    side_calls: int = 0

    def add_side_call(self, usage: Usage, cost_usd: Decimal) -> None:
        """Count one model call made beside the agent loop (an answer)."""
        self.side_usage = self.side_usage + usage
        self.side_cost_usd += cost_usd
        self.side_calls += 1

    def charge(self, metrics: Any) -> None:
        """Add the side calls' usage and cost to the run's RunMetrics, so the
        AgentRun's tokens and cost include them."""
        metrics.usage = metrics.usage + self.side_usage
        metrics.cost_usd += self.side_cost_usd


@dataclass
class Step:
    """One agent step of a task as the phase runner (agents.phase_runner)
    prepared it: the task's forge, branch and worktree, and once the jail is
    up its sandbox and the documents of earlier phases. A role's hooks read
    it and leave what its result needs in `context`."""

    task: Task
    forge: Forge
    branch: str
    worktree: Path
    context: RoleContext
    sandbox: Sandbox | None = None
    documents: dict[str, str] = field(default_factory=dict)

    @property
    def repository(self) -> Repository:
        return self.task.repository

    @property
    def base_ref(self) -> str:
        """The base branch as fetched: what the change is measured against."""
        return f"origin/{self.task.repository.default_branch}"


@dataclass(frozen=True)
class Role:
    """One role: its name (also the model override key, CODEX_MODEL_<NAME>),
    the phase it works in, its instructions, its result schema, the
    function turning a submitted result into a PhaseResult, the documents of
    earlier phases it reads, whether it changes files and whether it is
    shown the repository map.

    The phase runner owns the frame of a step (budget, instance, client,
    worktree, jail, prompt, the agent's run, its record); a role's phase
    does its own work through the hooks below, in this order, each a no-op
    by default: `before_agent` (settle the step without the agent),
    `prepare` (what the agent is told beyond the documents), `tools`,
    `result_schema` and `run_instructions` (what it works with),
    `check_submission` (a result sent back once more), `finish` (what the
    submitted result becomes, forge work included)."""

    name: str
    phase: str
    system_prompt: str
    schema: dict[str, Any]
    to_phase_result: Callable[[dict[str, Any], RoleContext], PhaseResult]
    instructions: str = ""
    documents: tuple[str, ...] = ()
    writes: bool = False
    # Whether its prompt carries the repository map (agents.repo_map).
    sees_map: bool = False

    def before_agent(self, step: Step) -> PhaseResult | None:
        """A result that settles this step without running the agent (a
        wait at a gate, a CI state read again), or None to run it."""
        return None

    def prepare(self, step: Step) -> str | PhaseResult:
        """What the agent is told of this phase beyond the documents (the
        checks' results, the diff, the work already committed), or a result
        that ends the step before the agent starts."""
        return ""

    def tools(self, step: Step) -> list[Tool]:
        """This role's own tools, beside the sandbox's and the team's."""
        return []

    def result_schema(self, step: Step) -> dict[str, Any]:
        """The schema submit_result checks in this step."""
        return self.schema

    def run_instructions(self, step: Step) -> str:
        """What to do now, the prompt's last paragraph."""
        return self.instructions

    def check_submission(self, step: Step, submitted: dict[str, Any]) -> str:
        """Why a valid result is sent back to the agent before it is accepted
        (something it must decide first), or "" to accept it."""
        return ""

    def finish(self, step: Step, submitted: dict[str, Any]) -> PhaseResult:
        """The step's result from the agent's submitted one."""
        return self.to_phase_result(submitted, step.context)


def string_list() -> dict[str, Any]:
    return {"type": "array", "items": {"type": "string"}}


def task_prompt(task: Task, *, documents: dict[str, str], instructions: str) -> str:
    """The first user message: the request (untrusted, fenced), the documents
    of earlier phases, and what to do now."""
    request = (
        f"Title: {task.title}\n\nDescription:\n{task.description or '(none)'}"
        f"\n\nAcceptance criteria:\n{task.acceptance_criteria or '(none given)'}"
    )
    parts = [
        f"Task {task.task_id} (priority {task.priority}) on repository "
        f"{task.repository.full_name}.",
        "The person's request, which this team works on:\n"
        + untrusted("the person's request", request),
    ]
    for name, content in documents.items():
        # Written by an agent from the request: fenced like it.
        parts.append(
            f"Document {name}, written by an earlier phase from the request:\n"
            + untrusted(f"{name}, written from the request", content)
        )
    parts.append(instructions.strip())
    return "\n\n".join(parts)
