"""What every role shares: the Role record, the context a role's result is
read in, and the task description every first prompt starts with."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agents.prompts import untrusted

if TYPE_CHECKING:
    from codex.tasks.models import Task
    from codex.tasks.runners import PhaseResult

COMMON_RULES = """\
You work inside the task's git worktree through tools: list_files, read_file,
search, write_file, edit_file and run_command (allowed programs only, no shell,
no secrets). Paths are relative to the worktree root. Work in small, checked
steps. When you are done, call submit_result exactly once with an object
matching its schema; nothing you do is recorded until then."""


@dataclass
class RoleContext:
    """What the phase runner knows when it reads a role's result."""

    task: Task
    branch: str = ""
    # verification: the repository's test, lint and type-check commands, run
    # for real before the agent starts (agents.roles.qa.CheckRun)
    checks: list[Any] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Role:
    """One role: its name (also the model override key, CODEX_MODEL_<NAME>),
    the phase it works in, its instructions, its result schema, and the
    function turning a submitted result into a PhaseResult."""

    name: str
    phase: str
    system_prompt: str
    schema: dict[str, Any]
    to_phase_result: Callable[[dict[str, Any], RoleContext], PhaseResult]
    instructions: str = ""


def string_list() -> dict[str, Any]:
    return {"type": "array", "items": {"type": "string"}}


def task_prompt(task: Task, *, documents: dict[str, str], instructions: str) -> str:
    """The first user message: the request (untrusted, fenced), the documents
    of earlier phases, and what to do now."""
    parts = [
        f"Task {task.task_id} (priority {task.priority}) on repository "
        f"{task.repository.full_name}.",
        untrusted("task title", task.title),
        untrusted("task description", task.description or "(none)"),
        untrusted("acceptance criteria", task.acceptance_criteria or "(none given)"),
    ]
    for name, content in documents.items():
        parts.append(f"Document {name} (written by an earlier phase):\n{content}")
    parts.append(instructions.strip())
    return "\n\n".join(parts)
