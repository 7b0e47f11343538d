"""Helpers for the pipeline tests: driving advance_task by hand."""

from __future__ import annotations

from codex.tasks.jobs import advance_task
from codex.tasks.models import Status, Task

ADVANCE_JOB = "codex.tasks.jobs.advance_task"
MAX_STEPS = 30


def run_steps(task: Task, max_steps: int = MAX_STEPS) -> list[str]:
    """Call advance_task until the task stops being workable (pending or
    in_progress) or `max_steps` is reached; returns what each call reported and
    leaves `task` refreshed from the database."""
    results = []
    task.refresh_from_db()
    while (
        task.status in (Status.PENDING, Status.IN_PROGRESS) and len(results) < max_steps
    ):
        results.append(advance_task(task.task_id))
        task.refresh_from_db()
    return results


def transitions(task: Task, field: str) -> list[tuple[str, str]]:
    """The (source, target) pairs of the task's transition events on `field`,
    in the order the event log tells them."""
    return [
        (event.source, event.target)
        for event in task.events.in_order().filter(kind="transition", field=field)
    ]
