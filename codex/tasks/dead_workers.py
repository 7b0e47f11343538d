"""What a worker that died leaves of a task (docs/architecture.md#layers: the
worker runtime names no app, the tasks app registers these from its ready()):

- `release_dead_worker(holder, reason)`: the leases it held on tasks and their
  running agent runs are freed;
- `give_up_job(package, reason)`: a step whose worker died running it too
  often is recorded as a failed job, and its task blocked (or escalated).
"""

from __future__ import annotations

import logging

from django.db import transaction
from django.utils import timezone
from django_fsm import TransitionNotAllowed

from codex.core.store import VersionConflict
from codex.fleet.models import AgentRun, RunStatus
from codex.tasks.models import Status, Task
from codex.tasks.models.guards import EXIT_TIMEOUT

logger = logging.getLogger(__name__)

# The actor the event log has named for these since the fleet's heartbeat job
# did them.
ACTOR = "system:heartbeat"
ADVANCE_JOB = "codex.tasks.jobs.advance_task"


def release_dead_worker(holder: str, reason: str) -> list[str]:
    """Free what the worker `holder` (worker:<host>:<pid>) held when it died:
    break the leases it holds on tasks, with a lease event naming `reason`,
    and fail their running agent runs. Its job is handed back by the caller
    (codex.core.workers.cluster_recovery), so nothing is re-queued here. Returns the
    task ids freed. Safe to run twice: a lease someone else took is kept."""
    freed: list[str] = []
    for task in Task.objects.filter(lease_holder=holder):
        try:
            with transaction.atomic():
                locked = (
                    Task.objects.select_for_update()
                    .filter(pk=task.pk, lease_holder=holder)
                    .exists()
                )
                if not locked:
                    continue
                task.break_lease(by=ACTOR, reason=f"{holder} is gone: {reason}")
                for run in AgentRun.objects.select_for_update(of=("self",)).filter(
                    task=task, status=RunStatus.RUNNING
                ):
                    run.perform(
                        "fail",
                        by=ACTOR,
                        reason=f"its worker is gone: {reason}",
                        error=f"{holder} is gone: {reason}",
                    )
        except (VersionConflict, TransitionNotAllowed) as exc:
            logger.info("freeing %s of %s skipped: %s", task.task_id, holder, exc)
            continue
        freed.append(task.task_id)
    return freed


def give_up_job(package: dict, reason: str) -> str | None:
    """A job whose worker died running it more than CODEX_JOB_REDELIVERIES
    times is not handed back again (codex.core.workers.brokers): record it as a failed
    job (the console's failed jobs list), and block the task it would have
    advanced, with `reason`, for an operator to look at (no retry time: it
    stays blocked until someone unblocks it). A task with no retries left is
    escalated instead. Returns the task id it stopped, if any."""
    from django_q.models import Task as JobResult

    now = timezone.now()
    JobResult.objects.update_or_create(
        id=package.get("id"),
        defaults={
            "name": package.get("name", ""),
            "func": str(package.get("func", "")),
            "args": package.get("args"),
            "kwargs": package.get("kwargs"),
            "started": package.get("started") or now,
            "stopped": now,
            "result": f"given up: {reason}",
            "success": False,
        },
    )
    args = package.get("args") or ()
    if package.get("func") != ADVANCE_JOB or not args:
        return None
    task = Task.objects.filter(task_id=args[0]).first()
    if task is None or task.status != Status.IN_PROGRESS:
        return None
    why = f"its step ({task.phase}) keeps killing its worker: {reason}"
    try:
        # Blocking needs a transient exit code (23 or 124): a worker killed
        # again and again looks like a step that times out.
        task.perform("block", by=ACTOR, reason=why, exit_code=EXIT_TIMEOUT)
    except TransitionNotAllowed:
        task.perform("escalate", by=ACTOR, reason=why, code="retry_limit")
    logger.error("task %s stopped: %s", task.task_id, why)
    return task.task_id
