"""Developer (implementation): the tasks of tasks.md, in the worktree, one
commit per finished task.

The developer's `commit_task` tool (`commit_tool`) commits the worktree's
changes as the recovery point of one tasks.md item: the message names the
item ("T001: Add mul with a test") and the commit carries `Codex-Step: T001`
next to `Codex-Task`. On a later attempt (a retried step, a crash, a
feedback cycle) the phase runner reads those trailers back from the branch
(integrations.git.committed_steps) and `progress_note` tells the agent which
items are already committed, so they are not redone. After the agent
submits, the runner commits whatever is left with `commit_message`, pushes
and opens the (draft) pull request; this module reads how far the developer
got.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agents.feedback import RESPONSES_DOCUMENT, responses_document
from agents.roles.base import COMMON_RULES, Role, RoleContext
from agents.tools import Tool, ToolError, _schema
from agents.worktree_hygiene import drop_scratch, scratch_note, untracked_files
from codex.tasks.runners import PhaseResult
from integrations.git import STEP_TRAILER, commit_all, run_git

SYSTEM_PROMPT = f"""\
You are the developer of an autonomous software team. You implement the tasks
of tasks.md in order, in the worktree, following plan.md and the analysis, and
never doing what it lists as must_not_do. Write tests with the code. Run the
tests (bash) before you submit.

When feedback from a previous verification or review is given, work from its
items first: fix every failure and blocking comment it lists.

Change files with write_file, edit_file, delete_file and move_file: a new file
is committed only when you made it with write_file or move_file, so scratch
and reproduction scripts you create through the shell are removed, never
shipped. Before you submit, call review_changes and read your whole diff:
nothing unrelated, nothing left over, tests included.

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

MAX_MESSAGE_CHARS = 200
_ITEM = re.compile(r"^- \[[ xX]\] (T\d{3,}): (.+?)\s*$", re.MULTILINE)


@dataclass(frozen=True)
class TaskItem:
    """One item of tasks.md: its id (T001) and title."""

    id: str
    title: str


def task_items(tasks_md: str) -> list[TaskItem]:
    """The items of tasks.md, in order (agents.roles.planner.tasks_md's form:
    `- [ ] T001: title`)."""
    return [TaskItem(match[1], match[2]) for match in _ITEM.finditer(tasks_md or "")]


def progress_note(
    items: list[TaskItem], committed: dict[str, str], *, feedback: bool = False
) -> str:
    """For the prompt: which items are already committed on the branch. In a
    feedback cycle with every item committed, the work left is the
    feedback (the changes are committed when the developer submits)."""
    done = [item for item in items if item.id in committed]
    if not done:
        return ""
    lines = [
        f"- {item.id}: {item.title} (commit {committed[item.id][:12]})" for item in done
    ]
    left = [item.id for item in items if item.id not in committed]
    return (
        "Already committed on the branch by an earlier attempt (done: do not "
        "redo them):\n"
        + "\n".join(lines)
        + (f"\nStill to do: {', '.join(left)}." if left else _nothing_left(feedback))
    )


def _nothing_left(feedback: bool) -> str:
    if feedback:
        return (
            "\nEvery task of tasks.md is committed: this cycle's work is the "
            "feedback above. Your fixes are committed with your commit_message "
            "when you submit."
        )
    return "\nNothing is left."


def commit_message(item: TaskItem, message: str) -> str:
    """The commit message of a task's recovery point: it names the task."""
    first = " ".join(message.split())[:MAX_MESSAGE_CHARS] or item.title
    return f"{item.id}: {first}\n\nCompletes {item.id} of tasks.md: {item.title}\n"


def commit_tool(
    worktree: Path,
    task_id: str,
    items: list[TaskItem],
    committed: dict[str, str],
    on_commit: Callable[[str, TaskItem], None],
    intended: set[str] | None = None,
) -> Tool:
    """The developer's `commit_task(task, message)`: commit the worktree's
    changes as the recovery point of tasks.md item `task`. `committed` (item
    id → sha) is updated; `on_commit(sha, item)` records the commit. New
    files not in `intended` (the files the developer's tools wrote) are
    removed first and named in the answer (agents.worktree_hygiene)."""
    by_id = {item.id: item for item in items}

    def commit_task(arguments: dict[str, Any]) -> str:
        wanted = str(arguments.get("task") or "").strip().upper()
        item = by_id.get(wanted)
        if item is None:
            known = ", ".join(by_id) or "none"
            raise ToolError(f"{wanted or '(none)'} is not a task of tasks.md ({known})")
        if item.id in committed:
            raise ToolError(
                f"{item.id} is already committed ({committed[item.id][:12]}); go on "
                "with the next task"
            )
        message = str(arguments.get("message") or "")
        note = ""
        if intended is not None:
            note = scratch_note(drop_scratch(worktree, intended))
        sha = commit_all(
            worktree,
            commit_message(item, message),
            task_id,
            trailers={STEP_TRAILER: item.id},
        )
        if sha is None:
            raise ToolError(
                f"nothing to commit for {item.id}: no file changed since the last "
                f"commit. {note}".strip()
            )
        committed[item.id] = sha
        on_commit(sha, item)
        return f"committed {item.id} as {sha[:12]}. {note}".strip()

    return Tool(
        "commit_task",
        "Commit all current changes as the finished task `task` of tasks.md "
        "(e.g. T001), with a one-line `message`. Call it once per task, when "
        "the task is done and its tests pass.",
        _schema(
            {
                "task": {"type": "string"},
                "message": {"type": "string", "maxLength": MAX_MESSAGE_CHARS},
            },
            ["task", "message"],
        ),
        commit_task,
    )


def changes_tool(worktree: Path, base: str, intended: set[str]) -> Tool:
    """The developer's `review_changes()`: the whole change against the base
    branch as it would ship (committed and not), and the new files that would
    be dropped as scratch."""

    def review_changes(arguments: dict[str, Any]) -> str:
        diff = run_git(["diff", base], worktree)
        new = untracked_files(worktree)
        kept = [name for name in new if name in intended]
        scratch = [name for name in new if name not in intended]
        parts = [diff.strip() or "(no change to tracked files against the base)"]
        if kept:
            parts.append("New files, to be committed: " + ", ".join(kept))
        if scratch:
            parts.append(
                "New files that will be removed as scratch (not made with "
                "write_file or move_file): " + ", ".join(scratch)
            )
        return "\n\n".join(parts)

    return Tool(
        "review_changes",
        "Show your whole change against the base branch (committed and not), "
        "the new files that will be committed and those that will be removed "
        "as scratch. Read it before you submit.",
        _schema({}),
        review_changes,
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


ROLE = Role(
    name="developer",
    phase="implementation",
    system_prompt=SYSTEM_PROMPT,
    schema=SCHEMA,
    to_phase_result=to_phase_result,
    instructions=INSTRUCTIONS,
)
