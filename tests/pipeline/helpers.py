"""Helpers for the pipeline tests: driving advance_task by hand."""

from __future__ import annotations

from codex.tasks.jobs import advance_task
from codex.tasks.models import Status, Task

ADVANCE_JOB = "codex.tasks.jobs.advance_task"
MAX_STEPS = 30


def queued_jobs() -> list[tuple[str, tuple]]:
    """(func, args) of every job row the ORM broker holds, oldest first: what
    a step or a transition wrote with its own UPDATE (codex.core.queue.job_row)."""
    from django_q.models import OrmQ
    from django_q.signing import SignedPackage

    packages = [SignedPackage.loads(row.payload) for row in OrmQ.objects.order_by("id")]
    return [(package["func"], tuple(package["args"])) for package in packages]


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
