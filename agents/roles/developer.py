"""Developer (implementation): the tasks of tasks.md, in the worktree. The
phase runner commits, pushes and opens the (draft) pull request afterwards;
this module reads how far the developer got."""

from __future__ import annotations

from typing import Any

from agents.roles.base import COMMON_RULES, Role, RoleContext
from codex.tasks.runners import PhaseResult

SYSTEM_PROMPT = f"""\
You are the developer of an autonomous software team. You implement the tasks
of tasks.md in order, in the worktree, following plan.md and the analysis, and
never doing what it lists as must_not_do. Write tests with the code. Run the
tests (run_command) before you submit.

When feedback from a previous verification or review is given, work from its
items first: fix every failure and blocking comment it lists.

Do not run git: your changes are committed and pushed for you after you submit,
with your commit_message. Report in tasks_completed how many tasks of tasks.md
are now done in total.

{COMMON_RULES}"""

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "summary": {"type": "string", "minLength": 1},
        "commit_message": {"type": "string", "minLength": 1},
        "tasks_completed": {"type": "integer", "minimum": 0},
    },
    "required": ["summary", "commit_message", "tasks_completed"],
}

INSTRUCTIONS = (
    "Implement the next tasks of tasks.md (all of them if you can), then submit."
)


def to_phase_result(result: dict[str, Any], context: RoleContext) -> PhaseResult:
    """Progress only: the runner adds commits, branch, pull request and CI."""
    total = context.task.total_tasks
    done = min(int(result["tasks_completed"]), total) if total else 0
    return PhaseResult(current_task=done, branch=context.branch)


ROLE = Role(
    name="developer",
    phase="implementation",
    system_prompt=SYSTEM_PROMPT,
    schema=SCHEMA,
    to_phase_result=to_phase_result,
    instructions=INSTRUCTIONS,
)
