"""Developer (implementation): the tasks of tasks.md, in the worktree, one
commit per finished task.

The developer's `commit_task` tool (`commit_tool`) commits the worktree's
changes as the recovery point of one tasks.md item: the message names the
item ("T001: Add mul with a test") and the commit carries `Codex-Step: T001`
next to `Codex-Task`. On a later attempt (a retried step, a crash, a
feedback cycle) the phase runner reads those trailers back from the branch
(integrations.git.committed_steps) and `progress_note` tells the agent which
items are already committed, so they are not redone (agents.roles.developer.
progress). After the agent submits, whatever is left is committed with its
commit_message, the branch pushed and the (draft) pull request opened
(agents.roles.developer.pull_request); this module reads how far the
developer got.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from agents import feedback as feedback_loop
from agents.feedback import RESPONSES_DOCUMENT, responses_document
from agents.roles.base import COMMON_RULES, Role, RoleContext, Step
from agents.roles.developer import pull_request
from agents.roles.developer.progress import (
    TaskItem,
    changes_tool,
    commit_message,
    commit_tool,
    progress_note,
    task_items,
)
from agents.worktree_hygiene import untracked_files
from codex.tasks.runners import PhaseResult
from integrations.git import committed_steps

if TYPE_CHECKING:
    from agents.tools import Tool

SHELL_FILES_SHOWN = 50
ASKED_ABOUT_SHELL_FILES = "asked_about_shell_files"

SYSTEM_PROMPT = f"""\
You are the developer of an autonomous software team. You implement the tasks
of tasks.md in order, in the worktree, following plan.md and the analysis, and
never doing what it lists as must_not_do. Write tests with the code. Run the
tests (bash) before you submit.

When feedback from a previous verification or review is given, work from its
items first: fix every failure and blocking comment it lists.

Change files with write_file, edit_file, delete_file and move_file. A new
file you make through the shell (a scratch or reproduction script, or a
file written with `cat > f`) is removed before the commit unless you keep it:
when you submit, such files are listed back to you and you answer with
keep_files (those that belong to the change; [] for none). Before you submit,
call review_changes and read your whole diff: nothing unrelated, nothing left
over, tests included.

Do not run git. When a task of tasks.md is done and its tests pass, call
commit_task with its id (e.g. T001) and a one-line message: that commit is the
task's recovery point. Tasks listed as already committed are done; do not
redo them. Whatever is left when you submit is committed for you with your
commit_message, and the branch is pushed. Report in tasks_completed how many
tasks of tasks.md are now done in total.

{COMMON_RULES}"""

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "summary": {"type": "string", "minLength": 1},
        "commit_message": {"type": "string", "minLength": 1},
        "tasks_completed": {"type": "integer", "minimum": 0},
        # New files made through the shell that belong to the change.
        "keep_files": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["summary", "commit_message", "tasks_completed"],
}

INSTRUCTIONS = (
    "Implement the next tasks of tasks.md (all of them if you can), committing "
    "each with commit_task when it is done, then submit."
)

FEEDBACK_INSTRUCTIONS = (
    "Fix what the findings above ask for (and any task of tasks.md not yet "
    "done), run the tests, read your diff, then submit with an answer to every "
    "finding in feedback_responses."
)

WRITER_DOCUMENT = "writer.json"
ACTIONS = {"A": "create", "M": "modify", "D": "delete", "R": "rename", "C": "create"}


def writer_record(result: dict[str, Any], context: RoleContext) -> str:
    """writer.json: the developer's summary, the commit message and the
    branch's changes ({file, action}) from `git diff --name-status`."""
    changes = []
    for line in str(context.extra.get("changes") or "").splitlines():
        status, _, paths = line.partition("\t")
        if not paths:
            continue
        changes.append(
            {
                "file": paths.split("\t")[-1],
                "action": ACTIONS.get(status[:1], "modify"),
            }
        )
    tests = [c["file"] for c in changes if "test" in c["file"].rsplit("/", 1)[-1]]
    record = {
        "summary": result["summary"],
        "commit_message": result["commit_message"],
        "changes": changes,
        "test_files": tests,
    }
    return json.dumps(record, indent=2, sort_keys=True) + "\n"


def to_phase_result(result: dict[str, Any], context: RoleContext) -> PhaseResult:
    """Progress: the runner adds commits, branch, pull request and CI. The
    tasks done are what the agent reports, and at least the items with a
    commit of their own (context.extra["committed_steps"]). In a feedback
    cycle the developer's answer to each finding becomes
    feedback-responses.md, which the next reviewer reads."""
    total = context.task.total_tasks
    committed = len(context.extra.get("committed_steps") or {})
    done = min(max(int(result["tasks_completed"]), committed), total) if total else 0
    phase_result = PhaseResult(current_task=done, branch=context.branch)
    if "changes" in context.extra:
        phase_result.artifacts[WRITER_DOCUMENT] = writer_record(result, context)
    feedback = context.extra.get("feedback")
    if feedback is not None:
        phase_result.artifacts[RESPONSES_DOCUMENT] = responses_document(
            feedback, list(result.get("feedback_responses") or [])
        )
    return phase_result


class Developer(Role):
    """The implementation phase: the only role that writes files."""

    def before_agent(self, step: Step) -> PhaseResult | None:
        # After a "CI pending" wait only the CI state is read again.
        return pull_request.recheck_ci(step)

    def prepare(self, step: Step) -> str:
        """The findings of the last verification or review to answer, and
        the tasks.md items already committed on the branch."""
        context = step.context
        feedback = feedback_loop.latest(step.task)
        if feedback is not None:
            context.extra["feedback"] = feedback
        items = task_items(step.documents.get("tasks.md", ""))
        committed = committed_steps(step.worktree, step.base_ref, step.task.task_id)
        context.extra["task_items"] = items
        context.extra["committed_steps"] = committed
        note = progress_note(items, committed, feedback=feedback is not None)
        if feedback is None:
            return note
        # The findings come first; the developer answers each by id.
        return f"{feedback_loop.feedback_prompt(feedback)}\n\n{note}"

    def result_schema(self, step: Step) -> dict[str, Any]:
        feedback = step.context.extra.get("feedback")
        if feedback is None:
            return self.schema
        return feedback_loop.responses_schema(self.schema, feedback.ids)

    def run_instructions(self, step: Step) -> str:
        if "feedback" in step.context.extra:
            return FEEDBACK_INSTRUCTIONS
        return self.instructions

    def tools(self, step: Step) -> list[Tool]:
        """commit_task (a commit per finished item, recorded as a commit
        tool event) and review_changes."""
        task, context = step.task, step.context

        def recorded(sha: str, item: TaskItem) -> None:
            task.record(
                "tool",
                by=f"agent:{self.name}",
                reason=f"commit {sha[:12]} ({item.id})",
                data={"tool": "commit", "success": True, "sha": sha, "step": item.id},
            )

        intended = context.extra["intended_files"]
        return [
            commit_tool(
                step.worktree,
                task.task_id,
                context.extra.get("task_items") or [],
                context.extra.setdefault("committed_steps", {}),
                recorded,
                intended,
            ),
            changes_tool(step.worktree, step.base_ref, intended),
        ]

    def check_submission(self, step: Step, submitted: dict[str, Any]) -> str:
        """New files made through the shell (`cat > test_x.py`) are dropped
        as scratch unless the developer keeps them: it is asked once, and
        its keep_files answer decides."""
        intended = step.context.extra["intended_files"]
        made_in_shell = [
            name for name in untracked_files(step.worktree) if name not in intended
        ]
        keep = submitted.get("keep_files")
        if keep is not None:
            intended.update(name for name in keep if name in made_in_shell)
            return ""
        if not made_in_shell or step.context.extra.get(ASKED_ABOUT_SHELL_FILES):
            return ""  # asked once: an answer without keep_files keeps none
        step.context.extra[ASKED_ABOUT_SHELL_FILES] = True
        shown = ", ".join(made_in_shell[:SHELL_FILES_SHOWN])
        if len(made_in_shell) > SHELL_FILES_SHOWN:
            shown += f" and {len(made_in_shell) - SHELL_FILES_SHOWN} more"
        return (
            "these new files were made through the shell, not with write_file, "
            f"and would be removed as scratch: {shown}. Submit again with "
            "keep_files listing the ones that belong to the change (tests, new "
            "modules), or keep_files: [] to drop them all."
        )

    def finish(self, step: Step, submitted: dict[str, Any]) -> PhaseResult:
        return pull_request.ship(step, self, submitted)


ROLE = Developer(
    name="developer",
    phase="implementation",
    system_prompt=SYSTEM_PROMPT,
    schema=SCHEMA,
    to_phase_result=to_phase_result,
    instructions=INSTRUCTIONS,
    documents=("spec.md", "plan.md", "tasks.md", "analysis.json"),
    writes=True,
    sees_map=True,
)

__all__ = [
    "FEEDBACK_INSTRUCTIONS",
    "ROLE",
    "TaskItem",
    "commit_message",
    "commit_tool",
    "progress_note",
    "task_items",
]
