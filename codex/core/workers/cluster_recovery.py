"""A cluster's own bookkeeping: start-up recovery, beats, sweeps and its stop.

`ClusterKeeper` lives in a django-q2 sentinel (codex.core.workers.brokers hooks it in):

- at start-up, before the workers are forked and any job is taken, it
  registers the cluster (codex.core.workers.clusters.WorkerCluster), hands back the
  jobs of every dead cluster (`recover_dead_clusters`) and runs the due
  schedules once, instead of waiting for django-q2's first scheduler tick
  about 30 s later (a cluster that keeps crashing would otherwise never run
  one), and imports the phase runner so that every worker forked from it
  starts warm;
- every cycle of the guard loop (half a second) it hands back the job of a
  worker of its own that ended on a signal or an error (killed, out of
  memory, timed out): that death counts against the job (see
  codex.core.workers.brokers, CODEX_JOB_REDELIVERIES);
- every second it looks whether a cluster registered on its machine lost its
  process, and then sweeps at once;
- at start-up and every CODEX_CLUSTER_HEALTH_SECONDS it reports what it finds
  of its machine (CODEX_WORKER_HEALTH: the command jail, the model key);
- every CODEX_CLUSTER_BEAT_SECONDS it stamps its beat; every
  CODEX_CLUSTER_SWEEP_SECONDS it sweeps: it hands back the jobs of its own
  workers that died unnoticed and of dead clusters (here or elsewhere: a
  silent beat);
- on SIGTERM it hands back the jobs it took and has not started, gives the
  running ones CODEX_STOP_GRACE_SECONDS, then stops their workers and hands
  those back too, and deregisters.

Handing back a job a worker was running first frees what that worker held
(`release_dead_worker`: the task's lease, its running agent run), so the job
delivered again finds the task free instead of "busy".
"""

from __future__ import annotations

import gc
import logging
import os
import queue
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.conf import settings
from django.db import DatabaseError, connections
from django.utils import timezone
from django.utils.module_loading import import_string

from codex.core.machine import machine_name
from codex.core.workers import hooks as worker_hooks
from codex.core.workers.clusters import WorkerCluster, process_exists
from codex.core.workers.queue_lock import ReaderLockWatch, UnstartedJobWatch

logger = logging.getLogger(__name__)

# How often a cluster looks whether another one on its machine died.
LOOK_SECONDS = 1.0


def worker_holder(host: str, pid: int) -> str:
    """The lease holder name of a worker (codex.tasks.jobs.worker_identity)."""
    return f"worker:{host}:{pid}"


def hand_back_workers(
    broker: Any,
    claim: str,
    host: str,
    pids: set[int],
    reason: str,
    *,
    unstarted: bool = True,
    counted: bool = False,
) -> int:
    """Free what the workers `pids` of cluster `claim` held and return their
    jobs (and, with `unstarted`, the cluster's unstarted ones) to the queue;
    `counted`: their worker's death counts against the job (see
    ClaimingBroker.redelivery)."""
    # What a dead worker held (task leases, running agent runs) is freed by
    # the apps that know it (codex.core.workers.hooks).
    for pid in pids:
        worker_hooks.dead_worker(worker_holder(host, pid), reason)
    return broker.hand_back(claim, pids=pids, unstarted=unstarted, counted=counted)


def recover_dead_clusters(broker: Any, *, exclude: str = "") -> int:
    """Hand back the jobs of every cluster that is gone (WorkerCluster.is_gone)
    and of claims no registered cluster owns; returns how many jobs."""
    # Claims first, clusters second: a cluster registers before it claims.
    claims = broker.known_claims()
    handed = 0
    now = timezone.now()
    registered = set()
    for cluster in WorkerCluster.objects.exclude(claim=exclude):
        registered.add(cluster.claim)
        if not cluster.is_gone(now):
            continue
        reason = (
            f"its cluster {cluster.claim} on {cluster.host} is gone (last beat "
            f"{cluster.beat_at:%H:%M:%S} UTC)"
        )
        pids = broker.started_pids(cluster.claim)
        handed += hand_back_workers(broker, cluster.claim, cluster.host, pids, reason)
        broker.forget(cluster.claim)
        WorkerCluster.objects.filter(pk=cluster.pk).delete()
        logger.warning("handed back the jobs of %s: %s", cluster, reason)
    for claim in claims - registered - {exclude}:
        # A cluster that died before anyone saw it registered, or whose
        # recovery was cut short: its workers' leases expire by themselves.
        handed += broker.hand_back(claim)
        broker.forget(claim)
    if handed:
        logger.warning("handed back %d job(s) of dead clusters", handed)
    return handed


@contextmanager
def prepared_for_forking() -> Iterator[None]:
    """Run the block (a warm-up) with the garbage collector resting, then
    close the database connections a fork must not inherit and freeze the
    heap (ClusterKeeper._freeze_heap). The warm-up allocates about half a
    million objects that all live on, and each collection it would trigger
    walks the heap grown so far (a fifth of the warm-up's CPU, paid again at
    every cluster start)."""
    gc.disable()
    try:
        yield
    finally:
        connections.close_all()
        ClusterKeeper._freeze_heap()


class ClusterKeeper:
    """The sentinel-side bookkeeping of one cluster (see the module docstring)."""

    def __init__(self, broker: Any, sentinel: Any) -> None:
        self.broker, self.sentinel = broker, sentinel
        self.host = machine_name()
        self.last_beat = self.last_sweep = self.last_look = time.monotonic()
        self.last_health = self.last_beat
        self.stop_seen: float | None = None
        self.dead_seen: dict[int, float] = {}
        self.done = False
        self.stopped: set[int] = set()
        # The worker processes seen in the pool, kept after django-q2 drops a
        # dead one from it, to read how it ended.
        self.workers: dict[int, Any] = {}
        queue = sentinel.task_queue if sentinel is not None else None
        self.queue_lock = ReaderLockWatch(queue) if queue is not None else None
        self.unstarted = UnstartedJobWatch(broker, queue) if queue is not None else None
        results = getattr(sentinel, "result_queue", None)
        self.result_lock = (
            ReaderLockWatch(results, "result") if results is not None else None
        )
        # The sentinel's monitor and pusher as last seen, by role.
        self.seen_processes: dict[str, Any] = {}

    def start(self) -> None:
        """Register, recover dead clusters' jobs, run due schedules and warm
        up, ready to fork the workers (`prepared_for_forking`)."""
        with prepared_for_forking():
            WorkerCluster.objects.create(
                claim=self.broker.claim,
                host=self.host,
                pid=os.getpid(),
                health=self._health(),
                health_at=timezone.now(),
            )
            recover_dead_clusters(self.broker, exclude=self.broker.claim)
            self._run_schedules()
            self._warm_up()

    @staticmethod
    def _warm_up() -> None:
        """Import what the workers' steps need before they are forked: every
        worker, the first ones and each one forked in place of a dead one,
        starts with it loaded instead of spending a second or more (more on a
        busy machine) importing the phase runner at its first step."""
        worker_hooks.warm_up()
        prepare = getattr(settings, "CODEX_WORKER_WARM_UP", "")
        if prepare:
            try:
                import_string(prepare)()
            except Exception:  # noqa: BLE001 - each worker builds it lazily
                logger.warning("could not prepare the workers with %s", prepare)

    @staticmethod
    def _freeze_heap() -> None:
        """Move every object the sentinel holds now (Django, the apps, the
        warmed-up modules) out of the garbage collector's reach before the
        workers are forked, then let the collector run again. Otherwise a
        worker's first full collection walks the whole heap it inherited
        (about 170 ms of CPU, measured in a worker's first step) and writes
        to every page it shares with the sentinel, and later full collections
        walk it again. This is the recipe of Python's gc.freeze documentation
        (collector off early, freeze right before forking, on again): no full
        collection first, which would walk the whole heap once more for the
        few cycles the imports left."""
        gc.freeze()
        gc.enable()

    def _run_schedules(self) -> None:
        from django_q.conf import Conf
        from django_q.scheduler import scheduler

        if Conf.SCHEDULER:
            scheduler(broker=self.broker)

    def tick(self) -> None:
        """Called from the sentinel's guard loop (and its stop) every cycle."""
        if self.done:
            return
        try:
            if self.sentinel.stop_event.is_set():
                self._stopping()
                return
            self._hand_back_crashed_workers()
            if self.queue_lock is not None and self.queue_lock.suspect:
                self.queue_lock.look(self._live_workers())
            if self.unstarted is not None and self.unstarted.suspect:
                self.unstarted.look()
            self._watch_the_monitor()
            self._watch_the_pusher()
            now = time.monotonic()
            if now - self.last_health >= settings.CODEX_CLUSTER_HEALTH_SECONDS:
                self.last_health = self.last_beat = now
                self._beat(health=self._health())
            elif now - self.last_beat >= settings.CODEX_CLUSTER_BEAT_SECONDS:
                self.last_beat = now
                self._beat()
            if now - self.last_look >= LOOK_SECONDS:
                self.last_look = now
                if self._neighbour_died():
                    self.last_sweep = 0.0
            if now - self.last_sweep >= settings.CODEX_CLUSTER_SWEEP_SECONDS:
                self.last_sweep = now
                self._hand_back_dead_workers()
                recover_dead_clusters(self.broker, exclude=self.broker.claim)
        except DatabaseError:
            logger.exception("cluster %s: bookkeeping failed", self.broker.claim)
            connections.close_all()
        except Exception:  # noqa: BLE001 - the guard loop must keep running
            logger.exception("cluster %s: bookkeeping failed", self.broker.claim)

    def _beat(self, health: dict[str, Any] | None = None) -> None:
        """Stamp the beat (and, when given, the machine's health report)."""
        now = timezone.now()
        fields: dict[str, Any] = {"beat_at": now}
        if health is not None:
            fields.update(health=health, health_at=now)
        if not WorkerCluster.objects.filter(claim=self.broker.claim).update(**fields):
            # Presumed dead (a long pause) and recovered by another cluster:
            # its jobs went back to the queue; register again.
            logger.warning("cluster %s was presumed dead", self.broker.claim)
            WorkerCluster.objects.create(
                claim=self.broker.claim,
                host=self.host,
                pid=os.getpid(),
                health=self._health() if health is None else health,
                health_at=now,
            )

    @staticmethod
    def _health() -> dict[str, Any]:
        """What CODEX_WORKER_HEALTH finds of this machine; a failing check
        becomes a report saying so, never a cluster that cannot start."""
        path = getattr(settings, "CODEX_WORKER_HEALTH", "")
        if not path:
            return {}
        try:
            return dict(import_string(path)())
        except Exception as exc:  # noqa: BLE001 - the cluster must keep running
            logger.exception("the worker health check %s failed", path)
            return {"error": f"the health check failed: {type(exc).__name__}: {exc}"}

    def _neighbour_died(self) -> bool:
        """Whether a cluster registered on this machine has no process any
        more (one query: the sweep then follows at once, not within
        CODEX_CLUSTER_SWEEP_SECONDS)."""
        pids = (
            WorkerCluster.objects.filter(host=self.host)
            .exclude(claim=self.broker.claim)
            .values_list("pid", flat=True)
        )
        return any(not process_exists(pid) for pid in pids)

    def _hand_back_crashed_workers(self) -> None:
        """Every cycle: a worker that ended on a signal or an error (killed,
        out of memory, timed out) gets its job handed back at once. A worker
        that exited normally (recycled) may still have its last result on the
        way to the monitor: the sweep's grace covers it."""
        for process in self.sentinel.pool:
            self.workers.setdefault(process.pid, process)
        ended = [p for p in self.workers.values() if not p.is_alive()]
        if not ended:
            return
        for process in ended:
            del self.workers[process.pid]
            for watch in (self.queue_lock, self.unstarted):
                if watch is not None:
                    watch.worker_ended(process)
        crashed = {p.pid for p in ended if p.exitcode}
        running = self.broker.started_pids(self.broker.claim) if crashed else set()
        if crashed & running:
            handed = hand_back_workers(
                self.broker,
                self.broker.claim,
                self.host,
                crashed & running,
                "its worker process died",
                unstarted=False,
                counted=True,
            )
            logger.warning(
                "handed back %d job(s) of dead workers %s", handed, crashed & running
            )

    def _watch_the_monitor(self) -> None:
        """django-q2's monitor is the result queue's one reader: one killed
        while it waited for a result held the queue's reader lock, and the
        one started in its place would wait for it for ever."""
        if self.result_lock is None:
            return
        dead = self._replaced("monitor")
        if dead is not None and dead.exitcode is not None and dead.exitcode < 0:
            self.result_lock.reader_killed()
        if self.result_lock.suspect:
            monitor = self.sentinel.monitor
            live = monitor is not None and monitor.is_alive()
            self.result_lock.look([monitor.pid] if live else [])

    def _watch_the_pusher(self) -> None:
        """A pusher killed while it held a taken job (its put waiting for a
        full queue) leaves that job claimed and unstarted."""
        dead = self._replaced("pusher")
        if dead is not None and self.unstarted is not None:
            self.unstarted.pusher_ended(dead)

    def _replaced(self, role: str) -> Any:
        """The sentinel's `role` process (monitor, pusher) as last seen, if
        the sentinel has started another in its place since; else None."""
        current = getattr(self.sentinel, role, None)
        previous = self.seen_processes.get(role)
        self.seen_processes[role] = current
        return previous if previous is not None and previous is not current else None

    def _live_workers(self) -> set[int]:
        return {process.pid for process in self.sentinel.pool if process.is_alive()}

    def _hand_back_dead_workers(self, *, wait: float = 2.0) -> None:
        """Hand back the jobs of this cluster's workers that died, once seen
        dead for `wait` seconds (a worker that finished a job and exited is
        acknowledged by the monitor within that). The cluster lives on, so
        the job itself may be what kills its worker: the death counts."""
        now = time.monotonic()
        live = self._live_workers()
        dead = self.broker.started_pids(self.broker.claim) - live
        self.dead_seen = {pid: self.dead_seen.get(pid, now) for pid in dead}
        gone = {pid for pid, seen in self.dead_seen.items() if now - seen >= wait}
        if gone:
            handed = hand_back_workers(
                self.broker,
                self.broker.claim,
                self.host,
                gone,
                "its worker process died",
                unstarted=False,
                counted=True,
            )
            logger.warning("handed back %d job(s) of dead workers %s", handed, gone)
            for pid in gone:
                self.dead_seen.pop(pid, None)

    def _stopping(self) -> None:
        """SIGTERM: hand back at once what has not started; after the grace,
        stop the workers still running jobs and hand those back; at the end
        deregister."""
        now = time.monotonic()
        claim = self.broker.claim
        if self.stop_seen is None:
            self.stop_seen = now
            WorkerCluster.objects.filter(claim=claim).update(stopping=True)
            logger.info("cluster %s stopping: handing back its queued jobs", claim)
        # The pusher may have taken one more before it stopped.
        handed = self.broker.hand_back(claim, pids=set())
        if handed:
            logger.warning(
                "cluster %s stopping: handed back %d queued job(s)", claim, handed
            )
        running = self.broker.started_pids(claim)
        if running and now - self.stop_seen >= settings.CODEX_STOP_GRACE_SECONDS:
            self._stop_busy_workers(running)
        if self.stopped:
            self._forget_stopped_workers()
        if not self.sentinel.pool and not running:
            WorkerCluster.objects.filter(claim=claim).delete()
            self.broker.forget(claim)
            self.done = True

    def _stop_busy_workers(self, running: set[int]) -> None:
        """The grace is over: SIGKILL the workers still running jobs, and the
        pusher (it may wait to put a job no worker will take), and hand their
        jobs back once they are gone."""
        sentinel, claim = self.sentinel, self.broker.claim
        victims = running & self._live_workers() - self.stopped
        for pid in victims:
            logger.warning("cluster %s stopping: stopping worker %s", claim, pid)
            os.kill(pid, signal.SIGKILL)
            self.stopped.add(pid)
        if sentinel.pusher is not None and sentinel.pusher.is_alive():
            os.kill(sentinel.pusher.pid, signal.SIGKILL)
        # Hand them back now: django-q2's stop ends as soon as its pool is
        # empty, so a later tick may never come.
        for process in sentinel.pool:
            if process.pid in victims:
                process.join(timeout=5)
        gone = running - self._live_workers()
        if gone:
            handed = hand_back_workers(
                self.broker,
                claim,
                self.host,
                gone,
                "its cluster stopped and the step outlasted CODEX_STOP_GRACE_SECONDS",
                unstarted=False,
            )
            logger.warning(
                "cluster %s stopping: handed back %d running job(s) of workers %s",
                claim,
                handed,
                sorted(gone),
            )

    def _forget_stopped_workers(self) -> None:
        """Take the workers this keeper stopped out of the sentinel's pool and
        empty the memory queue (its jobs were handed back): django-q2's stop
        puts one stop message per pooled worker into that bounded queue, and
        would wait for ever for dead workers to make room."""
        sentinel = self.sentinel
        for process in list(sentinel.pool):
            if process.pid in self.stopped and not process.is_alive():
                sentinel.pool.remove(process)
        try:
            while True:
                sentinel.task_queue.get_nowait()
        except (queue.Empty, OSError, ValueError):
            pass
