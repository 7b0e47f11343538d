"""Reaping work whose worker went silent: runs, instances, orphaned worktrees.

Workers stamp `heartbeat_at` on the agent run and the agent instance they are
running every CODEX_HEARTBEAT_SECONDS (`beat()`). A worker that dies (killed,
out of memory, machine lost) stops beating; after CODEX_HEARTBEAT_STALE_SECONDS
this scheduled job

- fails its running AgentRun and re-queues the run's task, whose own 60-second
  lease (docs/domain/concurrency.md#leases) has long expired, so the next worker can
  take it over;
- terminates its AgentInstance (any status but terminated may terminate:
  docs/domain/fleet.md#instance-status),
  unless the instance belongs to a task still active (see parked_instances_q);
- removes worktree folders under CODEX_WORKTREE_ROOT that no live instance owns.

Heartbeats do not bump `version`, so each reap re-checks staleness under a row
lock: a worker that beats while the job runs keeps its run and instance.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Iterable
from datetime import datetime, timedelta
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.db.models.lookups import LessThan
from django.utils import timezone
from django_fsm import TransitionNotAllowed

from codex.core.store import VersionConflict
from codex.fleet.hooks import finished_task_statuses, live_worktrees, requeue_reaped
from codex.fleet.models import AgentInstance, AgentRun, RunStatus
from codex.fleet.models.instance import instance_silent_since
from codex.fleet.models.run import run_silent_since
from integrations.git import prune_all_mirrors

logger = logging.getLogger(__name__)

ACTOR = "system:heartbeat"


def stale_after() -> timedelta:
    """Silence longer than this means the worker is gone."""
    return timedelta(seconds=settings.CODEX_HEARTBEAT_STALE_SECONDS)


def stale_runs_q(cutoff: datetime) -> Q:
    """Runs with no heartbeat since `cutoff` (or, never having beaten, started
    before it): by the expression the index run_silent is built on."""
    return Q(LessThan(run_silent_since(), cutoff))


def stale_instances_q(cutoff: datetime) -> Q:
    """Instances with no heartbeat since `cutoff` (or, never having beaten, no
    activity since it); the same rule as AgentInstance.is_silent_for, by the
    expression the index instance_live_silent is built on."""
    return Q(LessThan(instance_silent_since(), cutoff))


def parked_instances_q() -> Q:
    """Instances of a task still active. Their liveness is the task's: a run of
    theirs is beaten by its worker (and reaped above when silent, which
    re-queues the task), and between two steps (a review, a retry, a person's
    answer) they wait to be reused by the task's next run; they are stopped
    when the task ends."""
    return Q(task__isnull=False) & ~Q(task__status__in=finished_task_statuses())


def reap_stale_work() -> dict[str, list[str]]:
    """Scheduled job: fail silent runs (re-queueing their tasks), terminate
    silent instances, and remove orphaned worktrees. Safe to run twice: what
    was reaped is no longer running.

    Returns what it did: session ids of failed runs, task ids re-queued,
    instance ids terminated, worktree paths removed.
    """
    now = timezone.now()
    cutoff = now - stale_after()
    failed, requeued = reap_stale_runs(cutoff)
    terminated = reap_stale_instances(cutoff)
    removed: list[Path] = []
    root = getattr(settings, "CODEX_WORKTREE_ROOT", None)
    if root:

        def live() -> Iterable[str]:
            yield from (
                AgentInstance.objects.running()
                .exclude(worktree_path="")
                .values_list("worktree_path", flat=True)
            )
            # The phase runner keeps one worktree per unfinished task: those
            # are live however long a phase runs (codex.fleet.hooks).
            yield from live_worktrees(Path(root))

        # A worktree created moments ago may not have its instance row yet.
        # The live set is read only when a folder is old enough to judge.
        removed = remove_orphaned_worktrees(Path(root), live(), older_than=cutoff)
        # Deleted worktree folders stay registered in their mirrors (and keep
        # their branches checked out) until git forgets them.
        prune_all_mirrors()
    return {
        "runs_failed": failed,
        "tasks_requeued": requeued,
        "instances_terminated": terminated,
        "worktrees_removed": [str(path) for path in removed],
    }


def reap_stale_runs(cutoff: datetime) -> tuple[list[str], list[str]]:
    """Fail every running AgentRun silent since `cutoff`; re-queue its task.

    Returns (session ids failed, task ids re-queued).
    """
    failed: list[str] = []
    requeued: list[str] = []
    candidates = AgentRun.objects.running().filter(stale_runs_q(cutoff))
    for pk in list(candidates.values_list("pk", flat=True)):
        try:
            with transaction.atomic():
                # Lock and re-check: a heartbeat since the scan keeps the run.
                run = (
                    # Lock the run only; the task row is the next worker's.
                    AgentRun.objects.select_for_update(of=("self",))
                    .select_related("task")
                    .filter(pk=pk, status=RunStatus.RUNNING)
                    .filter(stale_runs_q(cutoff))
                    .first()
                )
                if run is None:
                    continue
                last = run.heartbeat_at or run.started_at
                reason = (
                    f"no heartbeat since {last:%Y-%m-%d %H:%M:%S} UTC "
                    f"(more than {settings.CODEX_HEARTBEAT_STALE_SECONDS}s): "
                    "the worker is gone"
                )
                run.perform("fail", by=ACTOR, reason=reason, error=reason)
                task = run.task
                if task is not None and requeue_reaped(task):
                    requeued.append(task.task_id)
        except (VersionConflict, TransitionNotAllowed) as exc:
            logger.info("reaping run %s skipped: %s", pk, exc)
            continue
        failed.append(run.session_id)
    return failed, requeued


def reap_stale_instances(cutoff: datetime) -> list[str]:
    """Terminate every instance not yet terminated and silent since `cutoff`.

    Returns the instance ids terminated.
    """
    terminated: list[str] = []
    candidates = (
        AgentInstance.objects.running()
        .filter(stale_instances_q(cutoff))
        .exclude(parked_instances_q())
    )
    for pk in list(candidates.values_list("pk", flat=True)):
        try:
            with transaction.atomic():
                instance = (
                    AgentInstance.objects.select_for_update(of=("self",))
                    .running()
                    .filter(pk=pk)
                    .filter(stale_instances_q(cutoff))
                    .exclude(parked_instances_q())
                    .first()
                )
                if instance is None:
                    continue
                last = instance.heartbeat_at or instance.last_activity
                instance.perform(
                    "terminate",
                    by=ACTOR,
                    reason=(
                        f"no heartbeat since {last:%Y-%m-%d %H:%M:%S} UTC "
                        f"(more than {settings.CODEX_HEARTBEAT_STALE_SECONDS}s)"
                    ),
                )
        except (VersionConflict, TransitionNotAllowed) as exc:
            logger.info("reaping instance %s skipped: %s", pk, exc)
            continue
        terminated.append(instance.instance_id)
    return terminated


def remove_orphaned_worktrees(
    root: Path,
    live_paths: Iterable[str],
    *,
    older_than: datetime | None = None,
) -> list[Path]:
    """Delete the folders directly under `root` that no live instance owns.

    A folder is kept when it is a live worktree or contains one (a layout of
    root/<repository>/<instance> keeps the repository folder), when it was
    modified after `older_than` (its instance may not be saved yet), or when it
    is a symbolic link or resolves outside `root`: nothing outside the root is
    ever deleted. Returns the folders removed.
    """
    try:
        root = Path(root).resolve(strict=True)
    except (FileNotFoundError, NotADirectoryError):
        return []
    if not root.is_dir():
        return []
    deadline = older_than.timestamp() if older_than is not None else None
    candidates: list[Path] = []
    for entry in sorted(root.iterdir()):
        if entry.is_symlink() or not entry.is_dir():
            # Following a link could delete its target, wherever it points.
            continue
        path = entry.resolve()
        if path.parent != root or not path.is_relative_to(root):
            logger.warning("not removing %s: it resolves outside %s", entry, root)
            continue
        if deadline is not None and path.stat().st_mtime >= deadline:
            continue
        candidates.append(path)
    if not candidates:
        return []  # nothing to judge: the live set is not even read
    # The folders directly under the root that hold a live worktree (or are
    # one): a set, so each folder is looked up once, not against every path.
    kept: set[Path] = set()
    for path in live_paths:
        if not path:
            continue
        owned = _resolved(path)
        if root.is_relative_to(owned):
            # A live worktree at or above the root: every folder may be its own.
            logger.warning("not removing anything: %s is inside a live worktree", root)
            return []
        if owned.is_relative_to(root):
            kept.add(root / owned.relative_to(root).parts[0])
    removed: list[Path] = []
    for path in candidates:
        if path in kept:
            continue
        try:
            shutil.rmtree(path)
        except OSError as exc:
            # What is left is tried again on the next run.
            logger.warning("could not remove orphaned worktree %s: %s", path, exc)
            continue
        logger.info("removed orphaned worktree %s", path)
        removed.append(path)
    return removed


def _resolved(path: str) -> Path:
    """`path` with symbolic links resolved, as far as it exists."""
    return Path(path).resolve(strict=False)
