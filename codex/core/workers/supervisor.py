"""Worker clusters forked warm, and forked again when one dies.

A django-q2 cluster started from scratch (`manage.py qcluster`) spends about
1.5 CPU-seconds before its first job: Python, Django and the apps, then the
sentinel's warm-up (the model SDK alone is half of it; README.md,
"Workers"). `ClusterSupervisor` pays that once: it imports and prepares what
the workers need, then forks each cluster from its own memory. A cluster that
dies (its process group killed, out of memory, a crash) is replaced by another
fork at once, which starts in a few hundredths of that, and the new cluster's
sentinel hands back the dead one's jobs as at any start
(codex.core.workers.cluster_recovery).

Each cluster runs in a session of its own, so a signal to one cluster's
process group never reaches another or the supervisor, and each gets SIGTERM
if the supervisor dies, so no cluster outlives it. SIGTERM or SIGINT to the
supervisor stops every cluster gracefully (each hands back its jobs), then the
supervisor; a cluster that ended by itself quickly (a bad setting, an
unreachable database) is started again after a growing pause instead of in a
tight loop.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import logging
import multiprocessing
import os
import signal
import time
from dataclasses import dataclass
from multiprocessing.connection import wait

from django.conf import settings

logger = logging.getLogger(__name__)

# A cluster that ended by itself sooner than this after its start is
# crash-looping: the next start waits (1, 2, 4, ... at most MAX_PAUSE s).
QUICK_EXIT_SECONDS = 10.0
MAX_PAUSE_SECONDS = 30.0
# What a stopping cluster gets beyond its own grace before it is killed.
STOP_MARGIN_SECONDS = 15.0
PR_SET_PDEATHSIG = 1


def _die_with_parent(signum: int) -> None:
    """Have the kernel send `signum` to this process when its parent dies
    (Linux; elsewhere the cluster outlives a killed supervisor)."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signum)
    except (OSError, AttributeError):
        logger.warning("clusters will not stop if the supervisor is killed")


def run_cluster() -> None:
    """A cluster's main process, in the fork: its own session, the default
    signal handlers until django-q2's Cluster sets its own, then the cluster
    until its sentinel ends."""
    from django_q.cluster import Cluster

    os.setsid()
    _die_with_parent(signal.SIGTERM)
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, signal.SIG_DFL)
    cluster = Cluster()
    cluster.start()
    cluster.sentinel.join()


@dataclass
class Slot:
    """One of the clusters the supervisor keeps running."""

    number: int
    process: multiprocessing.Process | None = None
    started_at: float = 0.0
    quick_exits: int = 0
    start_after: float = 0.0


class ClusterSupervisor:
    """Keeps `clusters` worker clusters running, forked from its warm memory
    (module docstring)."""

    def __init__(self, clusters: int = 1) -> None:
        self.slots = [Slot(number) for number in range(1, clusters + 1)]
        self.stopping = False
        self.context = multiprocessing.get_context("fork")

    def run(self) -> None:
        """Prepare, start the clusters, replace the dead ones until SIGTERM
        or SIGINT, then stop them all."""
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, self._ask_to_stop)
        self.prepare()
        while not self.stopping:
            now = time.monotonic()
            for slot in self.slots:
                if slot.process is None and now >= slot.start_after:
                    self._start(slot)
            running = [slot.process.sentinel for slot in self.slots if slot.process]
            wait(running, timeout=self._next_wake(now))
            for slot in self.slots:
                if slot.process is not None and not slot.process.is_alive():
                    self._ended(slot)
        self._stop_all()

    @staticmethod
    def prepare() -> None:
        """What every cluster's sentinel prepares before forking its workers
        (ClusterKeeper._warm_up), done once here so each fork inherits it,
        the same way (`prepared_for_forking`)."""
        from codex.core.workers.cluster_recovery import (
            ClusterKeeper,
            prepared_for_forking,
        )

        with prepared_for_forking():
            ClusterKeeper._warm_up()

    def _start(self, slot: Slot) -> None:
        slot.process = self.context.Process(
            target=run_cluster, name=f"codex-cluster-{slot.number}"
        )
        slot.process.start()
        slot.started_at = time.monotonic()
        logger.info("cluster %d started (pid %s)", slot.number, slot.process.pid)

    def _ended(self, slot: Slot) -> None:
        process, slot.process = slot.process, None
        code = process.exitcode
        process.close()
        lived = time.monotonic() - slot.started_at
        if self.stopping:
            return
        # A killed cluster (negative code: its signal) starts again at once;
        # one that ended by itself soon after starting waits longer each time.
        if code is not None and code >= 0 and lived < QUICK_EXIT_SECONDS:
            pause = min(MAX_PAUSE_SECONDS, 2.0**slot.quick_exits)
            slot.quick_exits += 1
        else:
            pause, slot.quick_exits = 0.0, 0
        slot.start_after = time.monotonic() + pause
        logger.warning(
            "cluster %d ended (exit code %s after %.1f s); another starts in %.0f s",
            slot.number,
            code,
            lived,
            pause,
        )

    def _next_wake(self, now: float) -> float:
        waiting = [slot.start_after - now for slot in self.slots if not slot.process]
        return max(0.05, min([1.0, *waiting]))

    def _ask_to_stop(self, signum: int, frame: object) -> None:
        self.stopping = True

    def _stop_all(self) -> None:
        """SIGTERM to every cluster (each hands back its jobs within its
        grace), then SIGKILL to the process group of any still there."""
        running = [slot.process for slot in self.slots if slot.process]
        for process in running:
            process.terminate()
        deadline = (
            time.monotonic() + settings.CODEX_STOP_GRACE_SECONDS + STOP_MARGIN_SECONDS
        )
        for process in running:
            process.join(max(0.1, deadline - time.monotonic()))
            if process.is_alive():
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.join()
        logger.info("all clusters stopped")
