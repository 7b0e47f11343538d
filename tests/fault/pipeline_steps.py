"""Helpers of the pipeline fault tests: what the agents answer, and stepping
a task with advance_task (the fixtures are in tests/fault/pipeline_harness)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

from django.utils import timezone

from codex.tasks.jobs import advance_task, resume_due_tasks
from codex.tasks.models import Status, Task
from tests.model_stub import Reply, message, submit, tool_use

ISSUE = 1
TOKENS = [
    "ghp_firstTokenAAAAAAAAAAAAAAAAAAAAAAAAAA",
    "ghp_secondTokenBBBBBBBBBBBBBBBBBBBBBBBBB",
]
SPEC = (
    "# Feature: multiply\n\n## Overview\nA mul function.\n\n"
    "## Acceptance Criteria\n- mul(2, 3) == 6\n"
)
MUL = "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n"
TEST_MUL = "from calc import mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n"

RESULTS = {
    "spec_md": {"should_proceed": True, "needs_clarification": False, "spec_md": SPEC},
    "plan_md": {
        "plan_md": "# Implementation Plan\n\nAdd mul to calc.py.",
        "tasks": [{"title": "Add mul with a test"}],
        "analysis": {"files": ["calc.py"]},
    },
    "commit_message": {
        "summary": "Added mul and its test.",
        "commit_message": "Add mul",
        "tasks_completed": 1,
    },
    "recommendation": {
        "acceptance_criteria": [
            {"criterion": "mul(2, 3) == 6", "met": True, "evidence": "test_mul"}
        ],
        "recommendation": "approve",
        "summary": "All good.",
    },
    "assessment": {
        "assessment": "approve",
        "summary": "Clear.",
        "comments": [],
        "security": {"vulnerabilities_found": 0, "items": []},
    },
    "merge": {"release_notes": "Adds calc.mul.", "merge": True},
}


def role_of(body: dict[str, Any]) -> str:
    """Which role asks: the field only its submit_result schema has."""
    tool = next(t for t in body["tools"] if t["name"] == "submit_result")
    properties = tool["input_schema"]["properties"]
    return next(key for key in RESULTS if key in properties)


class Agents:
    """Answers every role the way a competent agent would, however often a
    phase runs: the developer writes calc.mul and its test, then submits.
    `hooks[role]` runs once before that role's next answer (a fault that
    happens while the agent works: a push to its branch, its worktree
    deleted)."""

    def __init__(self) -> None:
        self.hooks: dict[str, Callable[[], None]] = {}
        self.turns: list[str] = []

    def __call__(self, body: dict[str, Any]) -> Reply:
        role = role_of(body)
        self.turns.append(role)
        first_turn = len(body["messages"]) == 1
        # A run resumed on a worktree made again: its files must be written
        # again (agents.checkpoints tells it so).
        resumed_elsewhere = "prepared again" in str(body["messages"][-1])
        if role == "commit_message" and (first_turn or resumed_elsewhere):
            return message(
                tool_use("write_file", {"path": "calc.py", "content": MUL}),
                tool_use("write_file", {"path": "test_mul.py", "content": TEST_MUL}),
            )
        hook = self.hooks.pop(role, None)
        if hook is not None:
            hook()
        return submit(RESULTS[role])


def step(task: Task) -> str:
    outcome = advance_task(task.task_id)
    task.refresh_from_db()
    return outcome


def wait_out_block(task: Task) -> None:
    """The blocked task's retry time comes (without sleeping): the scheduled
    resume job puts it back in progress."""
    assert task.status == Status.BLOCKED, (task.status, task.blocked_reason)
    assert task.blocked_until is not None, "blocked with no retry time"
    Task.objects.filter(pk=task.pk).update(
        blocked_until=timezone.now() - timedelta(seconds=1)
    )
    assert resume_due_tasks() == 1
    task.refresh_from_db()


def run_to_the_end(task: Task, max_steps: int = 20) -> list[str]:
    """Steps until the task leaves pending/in_progress, waiting out blocks."""
    outcomes = []
    for _ in range(max_steps):
        task.refresh_from_db()
        if task.status == Status.BLOCKED:
            wait_out_block(task)
        elif task.status not in (Status.PENDING, Status.IN_PROGRESS):
            return outcomes
        outcomes.append(step(task))
    raise AssertionError(f"still {task.status} after {max_steps} steps: {outcomes}")
