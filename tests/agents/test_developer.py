"""The developer's view of tasks.md: its items, and what is already done."""

from __future__ import annotations

from agents.roles.developer import TaskItem, commit_message, progress_note, task_items
from agents.roles.planner import tasks_md


def test_items_are_read_from_the_planners_tasks_md():
    text = tasks_md(
        [{"title": "Add mul", "description": "with a test"}, {"title": "Add sub"}]
    )
    assert task_items(text) == [
        TaskItem("T001", "Add mul"),
        TaskItem("T002", "Add sub"),
    ]


def test_the_progress_note_names_committed_and_remaining_items():
    items = [TaskItem("T001", "Add mul"), TaskItem("T002", "Add sub")]
    assert progress_note(items, {}) == ""
    note = progress_note(items, {"T001": "a" * 40})
    assert "- T001: Add mul (commit aaaaaaaaaaaa)" in note
    assert note.endswith("Still to do: T002.")
    assert progress_note(items, {"T001": "a", "T002": "b"}).endswith("Nothing is left.")


def test_the_commit_message_names_the_task_on_one_line():
    message = commit_message(TaskItem("T002", "Add sub"), "Add sub\nand more")
    assert message.splitlines()[0] == "T002: Add sub and more"
    assert "Completes T002 of tasks.md: Add sub" in message
    assert commit_message(TaskItem("T003", "Docs"), "  ").startswith("T003: Docs\n")
