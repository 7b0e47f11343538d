"""The developer's progress through tasks.md: its items, which are committed
on the branch (their `Codex-Step` trailers), and the tools that commit one
item as its recovery point (`commit_task`) and show the whole change before
submitting (`review_changes`)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agents.tools import Tool, ToolError, _schema
from agents.worktree_hygiene import drop_scratch, scratch_note, untracked_files
from integrations.git import STEP_TRAILER, commit_all, run_git

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
