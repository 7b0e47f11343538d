"""Worker entry points for tasks. Jobs take ids and re-read their rows.

Every job here is safe to run twice (django-q2 delivers at least once): it
checks state and version before acting, under the task's lease.
"""

from __future__ import annotations

import logging
import os
import threading
import uuid

from django.conf import settings
from django.db import DatabaseError, close_old_connections, connections, transaction
from django.db.models import QuerySet
from django.utils import timezone

from codex.children.flow import held_step
from codex.core.database import (
    DATABASE_UNAVAILABLE,
    connection_lost,
    wait_for_database,
)
from codex.core.errors import ClassifiedFailure
from codex.core.machine import machine_name
from codex.core.store import LeaseUnavailable, VersionConflict
from codex.core.workers import enqueue_on_commit, job_handed_back
from codex.fleet.models import AgentRun, running_step
from codex.fleet.reviews import ReviewLimitReached
from codex.tasks.models import ControlRequest, EscalationReason, Status, Task
from codex.tasks.pipeline import apply_result, should_continue
from codex.tasks.runners import PhaseResult, get_phase_runner

logger = logging.getLogger(__name__)

ADVANCE_JOB = "codex.tasks.jobs.advance_task"
RUN_METRICS = (
    "tool_count",
    "files_changed",
    "response_length",
    "input_tokens",
    "output_tokens",
    "cache_write_tokens",
    "cache_read_tokens",
    "cost_usd",
)


def worker_identity() -> str:
    """Who holds a lease taken by this process: worker:<host>:<pid>."""
    return f"worker:{machine_name()}:{os.getpid()}"


def advance_task(task_id: str) -> str:
    """Run one step of a task: lease, run the current phase (recorded as an
    agent run), apply the result, apply pauses and cancellations requested
    meanwhile, release, and enqueue the next step. A task that is not ready, or
    whose lease another worker holds, is left alone. Returns what it did.

    A step that loses the database (a restart, a failover) waits for it to
    answer again and hands itself back to the queue (`_requeue_after_outage`):
    its transaction was rolled back, so the step simply runs again."""
    if job_handed_back():
        # Its cluster handed it back before it started: it runs elsewhere.
        return "handed back"
    holder = worker_identity()
    try:
        return _advance_task(task_id, holder)
    except DATABASE_UNAVAILABLE as exc:
        if not connection_lost():
            raise  # the database answered with an error: not an outage
        return _requeue_after_outage(task_id, holder, exc)


def _advance_task(task_id: str, holder: str) -> str:
    task = Task.objects.with_repository(task_id)
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
        if ControlRequest.objects.pending_of(task.pk):
            return _apply_requests_only(task, holder)
        if task.status == Status.PENDING:
            task.start(by=holder)
            task.save()
        # A parent works through its children; a child's release waits for
        # the parent's analysis (docs/children.md).
        held = held_step(task, by=holder)
        if held is not None:
            return f"held: {held}"
        phase = task.phase
        run = AgentRun.objects.begin(
            by=holder,
            session_id=f"{task.task_id}:{phase}:{uuid.uuid4().hex[:8]}",
            task=task,
        )
        with Heartbeat(task, holder, run), running_step(run):
            result = _run_phase(task, task_id)
        with transaction.atomic():
            apply_result(task, result, by=holder)
            task.apply_control_requests()
            if should_continue(task):
                # Its job row goes in with the task's UPDATE (ORM broker).
                task.enqueue_with_save(ADVANCE_JOB, task.task_id)
            task.save(release_lease=True)
            _finish_run(run, result, holder, phase, task)
    except VersionConflict as exc:
        # Someone broke our lease and changed the task: their state wins.
        logger.warning("advance_task %s: discarded step: %s", task_id, exc)
        return "conflict"
    finally:
        if task.held_lease == holder:
            task.release_lease()
    return f"{task.status}/{task.phase}"


def _requeue_after_outage(task_id: str, holder: str, exc: Exception) -> str:
    """The database went away during a step: wait until it answers (for up to
    80% of the job's timeout), give back the lease if this worker still holds
    it, and enqueue the step again. If it does not come back in time, raise:
    the ORM broker then redelivers the unacknowledged step (its acknowledgement
    fails too), and under Redis the stale-work and stuck-task jobs re-queue it.
    """
    logger.warning(
        "advance_task %s: lost the database (%s: %s); waiting for it",
        task_id,
        type(exc).__name__,
        str(exc).strip()[:300],
    )
    if not wait_for_database(timeout=settings.Q_CLUSTER["timeout"] * 0.8):
        raise exc
    Task.objects.filter(task_id=task_id, lease_holder=holder).update(
        lease_holder=None, lease_expires_at=None
    )
    enqueue_on_commit(ADVANCE_JOB, task_id)
    logger.info("advance_task %s: the database is back; step re-queued", task_id)
    return "requeued: database unavailable"


class Heartbeat:
    """While a phase runs, keep the task's lease and the agent run alive.

    A phase can take many minutes and the lease lasts CODEX_LEASE_SECONDS; every
    CODEX_HEARTBEAT_SECONDS a background thread extends the lease (without a
    version bump, see keep_lease_alive) and stamps the run's heartbeat, which
    the stale-work reaper reads. The thread has its own database connection.
    """

    def __init__(self, task: Task, holder: str, run: AgentRun) -> None:
        self.task, self.holder, self.run = task, holder, run
        self.stopped = threading.Event()
        self.lost = False
        self.beats = 0
        self.thread = threading.Thread(
            target=self._loop, name=f"heartbeat-{task.task_id}", daemon=True
        )

    def __enter__(self) -> Heartbeat:
        self.thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stopped.set()
        self.thread.join(timeout=10)

    def _loop(self) -> None:
        try:
            while not self.stopped.wait(settings.CODEX_HEARTBEAT_SECONDS):
                # A long-lived thread: drop a connection the database closed
                # (a restart) instead of failing on it at every beat. Only
                # here, in the thread's own connection: a caller's connection
                # inside a transaction would be closed under it.
                close_old_connections()
                self.beat()
        finally:
            connections.close_all()

    def beat(self) -> None:
        """One heartbeat: extend the lease, stamp the run."""
        try:
            if not self.task.keep_lease_alive(self.holder):
                self.lost = True
                logger.warning("%s lost the lease of %s", self.holder, self.task)
            self.run.write_unversioned(heartbeat_at=timezone.now())
            self.beats += 1
        except DatabaseError:
            logger.exception("heartbeat of %s failed; trying again", self.task)


def _run_phase(task: Task, task_id: str) -> PhaseResult:
    try:
        return get_phase_runner().run(task)
    except ClassifiedFailure as failure:
        return PhaseResult.from_error(failure.error)
    except ReviewLimitReached as refused:
        # review.max_iterations binds (docs/domain/fleet.md#review-loop): no
        # review past it, a person decides.
        return PhaseResult.escalate(
            str(refused), code=EscalationReason.REVIEW_ITERATIONS
        )
    except Exception as exc:  # a crashing runner must not strand the task
        if isinstance(exc, DATABASE_UNAVAILABLE) and connection_lost():
            raise  # not the phase's failure: advance_task re-queues the step
        logger.exception("advance_task %s: the phase runner raised", task_id)
        return PhaseResult.blocked(
            f"the phase runner failed: {type(exc).__name__}: {exc}"[:2000]
        )


def _finish_run(
    run: AgentRun, result: PhaseResult, holder: str, phase: str, task: Task
) -> None:
    # Only the metrics and the transition's own fields are written: the
    # heartbeat thread wrote heartbeat_at meanwhile.
    measured = {
        name: result.metrics[name] for name in RUN_METRICS if name in result.metrics
    }
    # The issue this run worked on, and closed when its step completed the
    # task (the release merged): docs/domain/fleet.md#agent-run.
    measured.update(
        AgentRun.issue_outcome(
            task.issue_number, closed=task.status == Status.COMPLETED
        )
    )
    if result.outcome == "done":
        run.perform("succeed", by=holder, reason=f"{phase} step done", also=measured)
    else:
        run.perform(
            "fail",
            by=holder,
            reason=f"{phase} step {result.outcome}",
            error=result.reason,
            also=measured,
        )


def _apply_requests_only(task: Task, holder: str) -> str:
    """A pause or cancel arrived between steps: apply it instead of a step."""
    task.apply_control_requests()
    if should_continue(task):
        task.enqueue_with_save(ADVANCE_JOB, task.task_id)
    task.save(release_lease=True)  # with the requests' events, in one change
    return f"{task.status}/{task.phase}"


def due_blocked_tasks() -> QuerySet:
    """The ids of the blocked tasks whose retry time has come, 500 at most
    (found by the index task_blocked_until)."""
    due = Task.objects.filter(
        status=Status.BLOCKED,
        blocked_until__isnull=False,
        blocked_until__lte=timezone.now(),
    )
    return due.values_list("task_id", flat=True)[:500]


def resume_due_tasks() -> int:
    """Scheduled: blocked tasks whose retry time has come go back in progress
    (blocked → in_progress once the retry backoff elapsed,
    docs/domain/tasks.md#retries)."""
    resumed = 0
    for task_id in list(due_blocked_tasks()):
        task = Task.objects.get(task_id=task_id)
        try:
            task.perform("unblock", by="system:scheduler", reason="retry time reached")
        except (LeaseUnavailable, VersionConflict):
            continue  # someone else is acting on it; the next run looks again
        except Exception:  # noqa: BLE001 - one bad row must not stop the others
            logger.exception("resume_due_tasks: could not unblock %s", task_id)
            continue
        resumed += 1
    return resumed


# The reason a task's clean-up gives for what it settles and stops.
ENDINGS = {
    Status.COMPLETED: "the task completed",
    Status.FAILED: "the task failed",
    Status.CANCELLED: "the task was cancelled",
}


def clean_up_task(task_id: str) -> dict[str, int]:
    """After a task ended: have the apps settle what they hold for it (the
    claims app its issue claim: completed closes it, failed counts a failure,
    cancelled releases it; codex.tasks.hooks) and, unless it completed, stop
    its agent instances and runs. Safe to run twice."""
    from codex.fleet.models import AgentInstance, InstanceStatus, RunStatus
    from codex.tasks.hooks import task_ended

    task = Task.objects.with_repository(task_id)
    if task is None or task.status not in ENDINGS:
        return {}
    by = "system:cleanup"
    reason = f"{ENDINGS[task.status]} ({task_id})"
    done = {**task_ended(task, by=by, reason=reason), "instances": 0, "runs": 0}
    if task.status == Status.COMPLETED:
        return done
    for instance in AgentInstance.objects.filter(task=task).exclude(
        status=InstanceStatus.TERMINATED
    ):
        instance.perform("terminate", by=by, reason=reason)
        done["instances"] += 1
    for run in AgentRun.objects.filter(task=task, status=RunStatus.RUNNING):
        run.perform("fail", by=by, reason=reason)
        done["runs"] += 1
    return done
