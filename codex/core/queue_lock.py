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
cannot be read, nothing is released.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

logger = logging.getLogger(__name__)

READ_SYSCALL = "0"  # read(2) on x86-64 and arm64 alike: __NR_read
# django-q2 sets a worker's timer to -1 while it waits for a job.
IDLE = -1


def reading(pid: int, fd: int) -> bool | None:
    """Whether process `pid` is blocked in read(2) on file descriptor `fd`;
    None when that cannot be told (no /proc, no permission)."""
    try:
        with open(f"/proc/{pid}/syscall") as handle:
            fields = handle.read().split()
    except FileNotFoundError:
        return False  # gone: it reads nothing
    except OSError:
        return None
    if not fields or fields[0] != READ_SYSCALL or len(fields) < 2:
        return False
    try:
        return int(fields[1], 16) == fd
    except ValueError:
        return None


class ReaderLockWatch:
    """Watches the reader lock of one cluster's task queue (module docstring)."""

    def __init__(self, task_queue: Any) -> None:
        self.queue = task_queue
        self.suspect = False
        self.lost_looks = 0

    def worker_ended(self, process: Any) -> None:
        """A worker process ended: if a signal killed it while it waited for
        a job, it may have held the lock."""
        timer = getattr(process, "timer", None)
        killed = process.exitcode is not None and process.exitcode < 0
        if killed and timer is not None and timer.value == IDLE:
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
        logger.warning("released the task queue's reader lock a killed worker held")
        return True

    def _job_waiting(self) -> bool:
        try:
            return self.queue.qsize() > 0
        except NotImplementedError:  # macOS: no sem_getvalue
            return False
