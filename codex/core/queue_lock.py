"""A cluster's task queue after one of its workers was killed while it waited.

django-q2's workers take jobs with `multiprocessing.Queue.get()`, which holds
the queue's reader lock for as long as it waits for the next job. A worker
killed then (by an operator, the out-of-memory killer) dies holding that lock:
no other worker of its cluster can ever take a job again, while the cluster
beats on and keeps the job its pusher put in the queue claimed for ever.

`ReaderLockWatch` notices and repairs it. After a worker died idle, it looks
every cycle: a lock that is free, or held by a live worker blocked reading the
queue's pipe (only the lock's holder reads it), was not lost. A lock held
while no live worker reads the pipe and a job waits in the queue, seen on two
looks in a row, is the dead worker's: it is released, and the next waiting
worker takes the job. Whether
a worker reads the pipe comes from /proc/<pid>/syscall (Linux); where that
cannot be read, nothing is released. The result queue has one reader, the
cluster's monitor, which waits in it the same way: a monitor killed then
would leave the one django-q2 starts in its place waiting for ever, and no
job acknowledged again; the same watch releases that lock.

A worker killed just after it took a job from the queue, before it claimed it
as started (`codex.core.brokers`), leaves that job claimed by its live cluster
and in nobody's hands: `UnstartedJobWatch` finds it. The queue is first in,
first out, so the jobs the cluster took and no worker started are, newest
last: the dead worker's, then those still in the queue (`qsize()`), then the
one the pusher holds while the queue is full. Older ones than that, seen on
two looks in a row, are handed back to the front of the queue. A live worker
between taking a job and claiming it is there for milliseconds; were it
there across both looks, its start finds the job handed back and the step
returns (`job_handed_back`), so a step never runs twice at once.
"""

from __future__ import annotations

import functools
import logging
import os
import threading
import time
from collections.abc import Iterable
from typing import Any

logger = logging.getLogger(__name__)

# django-q2 sets a worker's timer to -1 while it waits for a job.
IDLE = -1


def reading(pid: int, fd: int) -> bool | None:
    """Whether process `pid` is blocked in read(2) on file descriptor `fd`;
    None when that cannot be told (no /proc, no permission)."""
    number = read_syscall()
    if number is None:
        return None
    try:
        fields = _syscall(f"/proc/{pid}/syscall")
    except FileNotFoundError:
        return False  # gone: it reads nothing
    except OSError:
        return None
    if not fields or fields[0] != number or len(fields) < 2:
        return False
    reads_from = _number(fields[1])
    return None if reads_from is None else reads_from == fd


@functools.cache
def read_syscall() -> str | None:
    """What /proc/<pid>/syscall shows first for a thread blocked in read(2)
    here: the number differs between architectures (0 on x86-64, 63 on
    arm64), so it is learnt once, from a thread of this process blocked in
    one. None when it cannot be learnt."""
    read_end, write_end = os.pipe()
    ids: list[int] = []

    def blocked_reader() -> None:
        ids.append(threading.get_native_id())
        os.read(read_end, 1)

    thread = threading.Thread(target=blocked_reader, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline:
            try:
                fields = _syscall(f"/proc/self/task/{ids[0]}/syscall") if ids else []
            except OSError:
                return None
            if len(fields) > 1 and _number(fields[1]) == read_end:
                return fields[0]
            time.sleep(0.001)
        return None
    finally:
        os.write(write_end, b"x")
        thread.join(1.0)
        os.close(read_end)
        os.close(write_end)


def _syscall(path: str) -> list[str]:
    with open(path) as handle:
        return handle.read().split()


def _number(field: str) -> int | None:
    try:
        return int(field, 16)
    except ValueError:
        return None


def killed_while_idle(process: Any) -> bool:
    """Whether a worker process ended on a signal while its timer said it
    waited for a job (or had just taken one and not started it)."""
    timer = getattr(process, "timer", None)
    killed = process.exitcode is not None and process.exitcode < 0
    return killed and timer is not None and timer.value == IDLE


class ReaderLockWatch:
    """Watches the reader lock of one cluster's task queue (module docstring)."""

    def __init__(self, queue: Any, name: str = "task") -> None:
        self.queue, self.name = queue, name
        self.suspect = False
        self.lost_looks = 0

    def worker_ended(self, process: Any) -> None:
        """A worker process ended: if a signal killed it while it waited for
        a job, it may have held the lock."""
        if killed_while_idle(process):
            self.suspect = True
            self.lost_looks = 0

    def reader_killed(self) -> None:
        """The queue's only reader (the monitor, for the result queue) was
        killed: it may have held the lock."""
        self.suspect = True
        self.lost_looks = 0

    def look(self, live_workers: Iterable[int]) -> bool:
        """One look (every cycle); True when it released a lost lock."""
        if not self.suspect:
            return False
        lock = self.queue._rlock
        if lock.acquire(False):
            lock.release()
            self.suspect = False
            return False
        fd = self.queue._reader.fileno()
        readers = [reading(pid, fd) for pid in live_workers]
        if None in readers or any(readers):
            # Held by a live worker (or cannot tell): not lost.
            self.suspect = False
            return False
        if not self._job_waiting():
            # Nothing stuck yet; a worker between taking the lock and reading
            # would look the same.
            self.lost_looks = 0
            return False
        self.lost_looks += 1
        if self.lost_looks < 2:
            return False
        self.suspect = False
        try:
            lock.release()
        except ValueError:  # released meanwhile
            return False
        logger.warning(
            "released the %s queue's reader lock a killed process held", self.name
        )
        return True

    def _job_waiting(self) -> bool:
        try:
            return self.queue.qsize() > 0
        except NotImplementedError:  # macOS: no sem_getvalue
            return False


class UnstartedJobWatch:
    """Finds the job a killed worker took and never started (module docstring)."""

    def __init__(self, broker: Any, task_queue: Any) -> None:
        self.broker, self.queue = broker, task_queue
        self.suspect = False
        self.seen: list[Any] | None = None

    def worker_ended(self, process: Any) -> None:
        """A worker process ended: if killed while idle, it may have just
        taken a job."""
        if killed_while_idle(process):
            self.suspect, self.seen = True, None

    def look(self) -> int:
        """One look (every cycle while suspect); returns how many jobs it
        handed back."""
        if not self.suspect:
            return 0
        try:
            older = self._older_than_the_queue()
        except NotImplementedError:  # macOS: no qsize()
            self.suspect = False
            return 0
        if older is None:
            return 0  # the queue moved meanwhile: look again
        if self.seen is None:
            self.seen = older
            self.suspect = bool(older)
            return 0
        lost = [job for job in older if job in self.seen]
        self.suspect, self.seen = False, None
        if not lost:
            return 0
        handed = self.broker.hand_back_jobs(self.broker.claim, lost)
        logger.warning(
            "handed back %d job(s) a killed worker took and never started", handed
        )
        return handed

    def _older_than_the_queue(self) -> list[Any] | None:
        """The cluster's taken, unstarted jobs older than every one still in
        its queue or held by its pusher; None when the queue's size changed
        while it looked."""
        from django_q.conf import Conf

        queued = self.queue.qsize()
        unstarted = self.broker.unstarted(self.broker.claim)
        if self.queue.qsize() != queued:
            return None
        # The pusher holds a taken job only while the queue is full (its put
        # waits), or for the moment between its take and its put.
        full = bool(Conf.QUEUE_LIMIT) and queued >= Conf.QUEUE_LIMIT
        legitimate = queued + (Conf.BULK if full else 0)
        return unstarted[: max(0, len(unstarted) - legitimate)]
