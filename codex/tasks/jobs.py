"""Worker entry points for tasks. Jobs take ids and re-read their rows."""

from __future__ import annotations

import logging
import os
import socket

from django.db import transaction

from codex.core.models import LeaseUnavailable, VersionConflict
from codex.core.queue import enqueue_on_commit
from codex.tasks.models import Status, Task
from codex.tasks.pipeline import apply_result, should_continue
from codex.tasks.runners import PhaseResult, get_phase_runner

logger = logging.getLogger(__name__)


def worker_identity() -> str:
    """Who holds a lease taken by this process: worker:<host>:<pid>."""
    return f"worker:{socket.gethostname()}:{os.getpid()}"


def advance_task(task_id: str) -> str:
    """Run one step of a task: lease, run the current phase, apply, release, and
    enqueue the next step. Safe to deliver twice: a task that is not ready, or
    whose lease another worker holds, is left alone. Returns what it did."""
    holder = worker_identity()
    task = Task.objects.select_related("repository").filter(task_id=task_id).first()
    if task is None:
        logger.warning("advance_task: no task %s", task_id)
        return "missing"
    if task.status not in (Status.PENDING, Status.IN_PROGRESS):
        return f"skipped: {task.status}"
    try:
        task.acquire_lease(holder, attempts=1)
    except LeaseUnavailable as exc:
        logger.info("advance_task %s: %s; another worker has it", task_id, exc)
        return "busy"
    try:
        # Taking the lease re-reads a row that moved on: check its state again.
        if task.status not in (Status.PENDING, Status.IN_PROGRESS):
            return f"skipped: {task.status}"
        if task.status == Status.PENDING:
            task.start(by=holder)
            task.save()
        try:
            result = get_phase_runner().run(task)
        except Exception as exc:  # a crashing runner must not strand the task
            logger.exception("advance_task %s: the phase runner raised", task_id)
            result = PhaseResult.blocked(
                f"the phase runner failed: {type(exc).__name__}: {exc}"[:2000]
            )
        with transaction.atomic():
            apply_result(task, result, by=holder)
            task.save(release_lease=True)
            if should_continue(task):
                enqueue_on_commit("codex.tasks.jobs.advance_task", task.task_id)
    except VersionConflict as exc:
        # Someone broke our lease and changed the task: their state wins.
        logger.warning("advance_task %s: discarded step: %s", task_id, exc)
        return "conflict"
    finally:
        if task.held_lease == holder:
            task.release_lease()
    return f"{task.status}/{task.phase}"
