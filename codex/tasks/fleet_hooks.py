"""What the tasks app does when the fleet's jobs ask (codex.fleet.hooks,
registered from its ready()): the fleet reaps and limits agent instances and
runs, the pipeline decides what becomes of their tasks.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from django_fsm import TransitionNotAllowed

from codex.core.store import LeaseUnavailable, VersionConflict
from codex.core.workers import enqueue_on_commit
from codex.tasks.models import EscalationReason, Status, Task

ADVANCE_JOB = "codex.tasks.jobs.advance_task"
# Only a task a worker would pick up is re-queued: blocked ones wait for their
# backoff, escalated and paused ones for a person, terminal ones for nobody.
REQUEUE_STATUSES = (Status.PENDING, Status.IN_PROGRESS)


def requeue_reaped(task: Task) -> bool:
    """The heartbeat job failed a silent run of `task`: re-queue its step (on
    commit) when a worker would pick it up. True when it was re-queued."""
    if task.status not in REQUEUE_STATUSES:
        return False
    enqueue_on_commit(ADVANCE_JOB, task.task_id)
    return True


def task_worktrees(root: Path) -> Iterator[str]:
    """The phase runner keeps one worktree per unfinished task
    (<root>/<task_id>): those are live however long a phase runs."""
    for task_id in Task.objects.active().values_list("task_id", flat=True):
        yield str(root.absolute() / task_id)


def escalate_abandoned(task_pk: int, reason: str, by: str) -> None:
    """The review limits abandoned the task's coding instances: a task in
    progress escalates (review limit) for a person to decide."""
    task = Task.objects.filter(pk=task_pk, status=Status.IN_PROGRESS).first()
    if task is None:
        return
    try:
        task.perform(
            "escalate", by=by, reason=reason, code=EscalationReason.REVIEW_LIMIT
        )
    except (LeaseUnavailable, VersionConflict, TransitionNotAllowed):
        # A worker is in a step: its instances are gone, so its next step
        # starts a fork; the next run of this job escalates then.
        return
