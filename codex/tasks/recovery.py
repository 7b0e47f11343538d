"""Stuck-task recovery (docs/domain/tasks.md#stuck-tasks), run as a scheduled job.

Recovery procedure:

1. scan for stuck tasks (> 2 hours in the same phase: CODEX_STUCK_AFTER_MINUTES);
2. for each, determine its recovery point (RECOVERY_POINTS below);
3. reset to the recovery point and clear transient errors;
4. re-queue it for processing (codex.tasks.jobs.advance_task, on commit);
5. alert when recovery was attempted > 3 times for the same phase
   (CODEX_RECOVERY_ALERT_AFTER), once per attempt through the outbox.

Only pending, in_progress and blocked tasks are ever touched (a pending one
whose first step was lost, e.g. with a restarted Redis broker's memory, would
otherwise wait forever): a paused task waits for a
user, an escalated one for a person's answer, and terminal ones are done. Every
change is made under the task's lease (docs/domain/concurrency.md#leases); a
lease somebody still holds is respected, an expired one is force-broken (only
an operator or this recovery may) with a lease event in the log.
"""

from __future__ import annotations

import logging
import os
import uuid
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from codex.core.machine import machine_name
from codex.core.store import LeaseUnavailable, VersionConflict, lease_is_free
from codex.core.workers import enqueue_on_commit
from codex.events.models import EventKind
from codex.tasks.models import Phase, PhaseStatus, Status, Task
from codex.tasks.models.choices import RECOVERABLE_STATUSES

logger = logging.getLogger(__name__)

ACTOR = "system:recovery"
ADVANCE_JOB = "codex.tasks.jobs.advance_task"
CLEARED_BY_RECOVERY = "cleared by recovery"

# Where each phase restarts, and what survives (docs/domain/tasks.md#recovery-points).
# The envelope fields named here (current_task, commits, pr_url, the artifacts
# and reports) are kept as they are; the phase's agent starts again from them.
RECOVERY_POINTS: dict[str, str] = {
    Phase.INTAKE: "start of phase (request data is immutable)",
    Phase.PLANNING: "after spec.md saved",
    Phase.IMPLEMENTATION: "after the last commit (current_task and commits kept)",
    Phase.VERIFICATION: "after the verification report saved",
    Phase.REVIEW: "after the review report saved",
    Phase.RELEASE: "before merge (pull request and approvals kept)",
}


def lease_holder_name() -> str:
    """A lease holder name unique to one recovery attempt.

    Events say ACTOR; the lease needs more, because a holder may re-take its own
    lease: two recovery jobs both named "system:recovery" would each think they
    held it and overwrite each other's work.
    """
    return f"{ACTOR}:{machine_name()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def stuck_after() -> timedelta:
    """How long a task may stay in one phase before it counts as stuck
    (configuration tasks.stuck_after_minutes)."""
    from codex.configuration.config import get_config

    return timedelta(minutes=get_config("tasks.stuck_after_minutes"))


def is_stuck(task: Task, now: datetime) -> bool:
    """Whether `task` is stuck: nobody is moving it on, and nobody will.

    Stuck means both:

    - its status is pending, in_progress or blocked (RECOVERABLE_STATUSES):
      work the system itself owes. Paused and escalated tasks wait for a
      person, however long that takes; terminal ones are done;
    - it entered its current phase more than `stuck_after()` before `now`
      (CODEX_STUCK_AFTER_MINUTES, 120 by default: more than 2 hours in the same
      phase). That is several times the longest single wait the
      pipeline itself makes: a phase's step runs in one job, killed at
      CODEX_JOB_TIMEOUT (15 minutes by default) and redelivered after
      CODEX_JOB_RETRY, and a blocked task's own retry backoff is capped at
      CODEX_RETRY_BACKOFF_MAX_SECONDS (30 minutes). A task past it has most
      likely lost its step (a dead worker, a broker that forgot the job)
      rather than being slow, and restarting the phase from its recovery
      point costs at most a repeated step.

    A slow step that is still alive keeps its lease: `recover_stuck_tasks`
    (which asks the same of the database) skips tasks with a live lease, and
    `recover_task` asks again under the lease before it changes anything.
    A task waiting for a fan-out is not stuck (`stuck_tasks`).
    """
    return stuck_tasks(now).filter(pk=task.pk).exists()


def stuck_tasks(now: datetime) -> QuerySet[Task]:
    """The tasks `is_stuck` at `now`, as a query: past `stuck_after()` in a
    phase with a status the system owes work on, and not waiting for a
    fan-out (a parent for its children's reports and analysis, a child at
    release for the parent's decision: docs/children.md). Those wait on the
    completion window, which its own scheduled job closes; restarting their
    step would only repeat the wait (and alert about it)."""
    from codex.children.flow import waiting_on_fan_out

    return Task.objects.filter(
        status__in=RECOVERABLE_STATUSES,
        phase_entered_at__lt=now - stuck_after(),
    ).exclude(waiting_on_fan_out())


def recoverable_task_ids(now: datetime) -> QuerySet:
    """The ids of the stuck tasks no worker holds, oldest first: what
    `recover_stuck_tasks` recovers. Read through the `task_stuck` index,
    which holds only the tasks work is owed on, so its cost follows the work
    in flight, not the history."""
    return (
        stuck_tasks(now)
        # A live lease means a worker is at it right now: not stuck, just slow.
        .filter(lease_is_free(now))
        .order_by("phase_entered_at", "id")
        .values_list("task_id", flat=True)
    )


def recover_stuck_tasks() -> int:
    """Scheduled job: recover every stuck task whose lease is free or expired.

    Returns how many were recovered. Safe to run twice, or in two workers at
    once: recovery resets `phase_entered_at`, so a recovered task is no longer
    stuck, and each task is changed only under its lease.
    """
    recovered = 0
    for task_id in list(recoverable_task_ids(timezone.now())):
        try:
            if recover_task(task_id):
                recovered += 1
        except VersionConflict as exc:
            # Someone changed the task while we worked on it: their state wins,
            # and the next run looks again.
            logger.info("recovery of %s skipped: %s", task_id, exc)
    return recovered


def recover_task(task_id: str) -> bool:
    """Reset one stuck task to its phase's recovery point and re-queue it.

    Returns False, changing nothing, when the task is gone, no longer stuck, or
    someone holds its lease. Raises VersionConflict if the row moves under us.
    """
    now = timezone.now()
    task = Task.objects.filter(task_id=task_id).first()
    if task is None or not is_stuck(task, now):
        return False
    if task.lease_holder and not task.lease_is_active:
        _break_expired_lease(task)
    holder = lease_holder_name()
    try:
        task.acquire_lease(holder, attempts=1)
    except LeaseUnavailable as exc:
        logger.info("recovery of %s skipped: %s", task_id, exc)
        return False
    try:
        # Taking the lease may have raced a last write by the old holder: decide
        # on the row as it is now that nobody else can change it.
        task.refresh_from_db()
        if not is_stuck(task, timezone.now()):
            return False
        with transaction.atomic():
            recoveries = _reset_to_recovery_point(task)
            task.save(release_lease=True)
            enqueue_on_commit(ADVANCE_JOB, task.task_id)
            if recoveries > settings.CODEX_RECOVERY_ALERT_AFTER:
                _alert_operators(task, recoveries)
        logger.info("recovered %s in %s (recovery %d)", task_id, task.phase, recoveries)
        return True
    finally:
        # Saving released it; this only runs when something failed before that.
        if task.held_lease == holder:
            task.release_lease()


def _break_expired_lease(task: Task) -> None:
    """Force-break a lease whose holder let it expire, logging a lease event.

    The row is locked and the expiry checked again first, so a holder that
    renewed in the meantime keeps its lease.
    """
    with transaction.atomic():
        row = (
            Task.objects.select_for_update()
            .filter(pk=task.pk)
            .values("lease_holder", "lease_expires_at")
            .first()
        )
        if row is None or not row["lease_holder"]:
            return
        expires_at = row["lease_expires_at"]
        if expires_at is not None and expires_at > timezone.now():
            return
        task.break_lease(
            by=ACTOR,
            reason=(
                f"recovering a stuck task: the lease of {row['lease_holder']} "
                f"expired at {expires_at:%Y-%m-%d %H:%M:%S} UTC"
                if expires_at
                else f"recovering a stuck task: lease of {row['lease_holder']}"
            ),
        )


def _reset_to_recovery_point(task: Task) -> int:
    """Apply steps 2-3 of the procedure above to the leased task in memory and
    queue its event.

    Returns how many times this phase has now been recovered.
    """
    now = timezone.now()
    phase = task.phase
    stuck_since = task.phase_entered_at
    progress: dict[str, Any] = dict(task.phase_progress.get(phase) or {})
    recoveries = int(progress.get("recoveries", 0)) + 1
    progress.update(
        status=PhaseStatus.IN_PROGRESS,
        recoveries=recoveries,
        last_recovered_at=now.isoformat(),
        recovery_point=RECOVERY_POINTS[phase],
    )
    progress.pop("completed_at", None)
    task.phase_progress = {**task.phase_progress, phase: progress}
    # The clock restarts, or the next scan would find the task stuck again.
    task.phase_entered_at = now

    cleared = 0
    errors = []
    for error in task.errors:
        if (
            isinstance(error, dict)
            and error.get("phase") == phase
            and not error.get("resolution")
        ):
            error = {**error, "resolution": CLEARED_BY_RECOVERY}
            cleared += 1
        errors.append(error)
    task.errors = errors

    was_blocked = task.status == Status.BLOCKED
    reason = (
        f"stuck in {phase} since {stuck_since:%Y-%m-%d %H:%M:%S} UTC "
        f"(more than {stuck_after().total_seconds() // 60:.0f} minutes): "
        f"reset to {RECOVERY_POINTS[phase]}"
    )
    if was_blocked:
        # The backoff guard would refuse while blocked_until lies ahead; a task
        # stuck this long has waited out any backoff worth honouring.
        task.blocked_until = None
        task.unblock(by=ACTOR, reason=reason)
    task.record(
        EventKind.CONTROL,
        by=ACTOR,
        reason=reason,
        data={
            "action": "recover",
            "phase": phase,
            "recoveries": recoveries,
            "recovery_point": RECOVERY_POINTS[phase],
            "stuck_since": stuck_since.isoformat(),
            "errors_cleared": cleared,
            "unblocked": was_blocked,
        },
    )
    return recoveries


def _alert_operators(task: Task, recoveries: int) -> None:
    """Step 5 of the procedure above: announce this recovery on the configured
    channels.

    The notification id names the task, the phase and the attempt, so a retried
    job never alerts twice for the same attempt (notifications are not
    idempotent: docs/domain/notifications.md#notification-outbox deduplicates
    them by notification_id) while every further attempt
    alerts again.
    """
    from codex.notifications.announcements import announce
    from codex.tasks.announcements import task_link

    phase = task.phase
    announce(
        f"recovery-alert:{task.task_id}:{phase}:{recoveries}",
        subject=f"{task.task_id} recovered {recoveries} times in {phase}",
        body=(
            f"Task {task.task_id} ({task.title}) was stuck in the {phase} phase "
            f"and has now been recovered {recoveries} times (alert threshold: "
            f"more than {settings.CODEX_RECOVERY_ALERT_AFTER}). It was re-queued "
            "from its recovery point; look at its events and errors to find out "
            f"why it keeps stalling: {task_link(task)}"
        ),
        task=task,
    )
