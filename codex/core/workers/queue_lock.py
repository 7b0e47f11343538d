"""A cluster's queues after one of its processes was killed while it waited.

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
as started (`codex.core.workers.brokers`), leaves that job claimed by its live cluster
and in nobody's hands; so does a pusher killed while it held a job it had
taken for a full queue. `UnstartedJobWatch` finds such a job. The queue is
first in, first out, so the jobs the cluster took and no worker started are,
oldest first: the lost ones, those still in the queue (its semaphore's count),
and the one the pusher may hold while the queue is full. One older than all
those, on two looks in a row, is handed back to the front of the queue; the
watch keeps looking for a few minutes after a death, as the queue moves on.
A live worker between taking a job and claiming it is there for milliseconds;
were it there across both looks, its start finds the job handed back: the
step returns at once (`job_handed_back`) and the monitor does not acknowledge
it, so the copy handed back is the one that runs.
"""

from __future__ import annotations

import logging
import multiprocessing.queues
import os
import threading
import time
from collections.abc import Iterable
from typing import Any

logger = logging.getLogger(__name__)

# django-q2 sets a worker's timer to -1 while it waits for a job.
IDLE = -1
# How long UnstartedJobWatch keeps looking after a death (under steady load
# the pusher always holds a job it cannot tell from a lost one).
WATCH_SECONDS = 300.0


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


_read_syscall: str | None = None


def read_syscall() -> str | None:
    """What /proc/<pid>/syscall shows first for a thread blocked in read(2)
    here: the number differs between architectures (0 on x86-64, 63 on
    arm64), so it is learnt from a thread of this process blocked in one,
    once it could be (a failure, say on a machine too busy to run the thread
    in time, is tried again at the next call). None when it cannot be learnt."""
    global _read_syscall
    if _read_syscall is None:
        _read_syscall = _learn_read_syscall()
    return _read_syscall


def _learn_read_syscall() -> str | None:
    read_end, write_end = os.pipe()
    ids: list[int] = []

    def blocked_reader() -> None:
        ids.append(threading.get_native_id())
        os.read(read_end, 1)

    thread = threading.Thread(target=blocked_reader, daemon=True)
    thread.start()
    number = None
    try:
        deadline = time.monotonic() + 2.0
        while number is None and time.monotonic() < deadline:
            try:
                fields = _syscall(f"/proc/self/task/{ids[0]}/syscall") if ids else []
            except OSError:
                break
            if len(fields) > 1 and _number(fields[1]) == read_end:
                number = fields[0]
            else:
                time.sleep(0.001)
    finally:
        os.write(write_end, b"x")
        thread.join(1.0)
        if not thread.is_alive():
            os.close(read_end)
            os.close(write_end)
        # else: left open, for the thread must not read a reused descriptor.
    return number


def _syscall(path: str) -> list[str]:
    with open(path) as handle:
        return handle.read().split()


def _number(field: str) -> int | None:
    try:
        return int(field, 16)
    except ValueError:
        return None


def queued(queue: Any) -> int:
    """How many items wait in `queue`, by its semaphore: one read leaves the
    count as it leaves the pipe. (django-q2's Queue.qsize() is a counter its
    get() lowers only after unpickling: a reader killed in between leaves it
    one too high for good.) Raises NotImplementedError where the semaphore's
    value cannot be read (macOS)."""
    return max(0, multiprocessing.queues.Queue.qsize(queue))


def idle_at_its_end(process: Any) -> bool:
    """Whether a worker process ended while its timer said it waited for a
    job (or had just taken one and not started it)."""
    timer = getattr(process, "timer", None)
    return timer is not None and timer.value == IDLE


def killed_while_idle(process: Any) -> bool:
    """Whether a worker process ended on a signal while it was idle."""
    killed = process.exitcode is not None and process.exitcode < 0
    return killed and idle_at_its_end(process)


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
            self.reader_killed()

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
            return queued(self.queue) > 0
        except NotImplementedError:  # macOS: no sem_getvalue
            return False


class UnstartedJobWatch:
    """Finds the job a killed worker or pusher took and no worker started
    (module docstring)."""

    def __init__(self, broker: Any, task_queue: Any) -> None:
        self.broker, self.queue = broker, task_queue
        self.until: float | None = None
        self.seen: list[Any] = []

    @property
    def suspect(self) -> bool:
        return self.until is not None

    def worker_ended(self, process: Any) -> None:
        """A worker process ended: if not by itself and while its timer said
        idle, it may have just taken a job."""
        if process.exitcode and idle_at_its_end(process):
            self._look_for_a_while()

    def pusher_ended(self, process: Any) -> None:
        """The pusher ended other than by a stop: it may have held a job."""
        if process.exitcode:
            self._look_for_a_while()

    def _look_for_a_while(self) -> None:
        self.until = time.monotonic() + WATCH_SECONDS
        self.seen = []

    def look(self) -> int:
        """One look (every cycle while suspect); returns how many jobs it
        handed back."""
        if self.until is None:
            return 0
        if time.monotonic() > self.until:
            self.until, self.seen = None, []
            return 0
        try:
            picture = self._older_than_the_queue()
        except NotImplementedError:  # macOS: no semaphore value
            self.until, self.seen = None, []
            return 0
        if picture is None:
            return 0  # the queue moved meanwhile: look again
        older, settled = picture
        if settled:
            self.until, self.seen = None, []  # nothing outside the queue
            return 0
        lost = [job for job in older if job in self.seen]
        self.seen = older
        if not lost:
            return 0
        handed = self.broker.hand_back_jobs(self.broker.claim, lost)
        self.seen = [job for job in older if job not in lost]
        logger.warning("handed back %d job(s) taken and never started", handed)
        return handed

    def _older_than_the_queue(self) -> tuple[list[Any], bool] | None:
        """The cluster's taken, unstarted jobs older than every one still in
        its queue or perhaps held by its pusher, and whether no job is
        outside the queue at all; None when the queue's size changed while
        it looked."""
        from django_q.conf import Conf

        waiting = queued(self.queue)
        unstarted = self.broker.unstarted(self.broker.claim)
        if queued(self.queue) != waiting:
            return None
        # The pusher may hold a taken job while the queue is full (its put
        # waits), or for the moment between its take and its put. A job
        # older than the queue but counted as the pusher's is found once the
        # queue moves on: it waits no longer than it would have in the queue.
        full = bool(Conf.QUEUE_LIMIT) and waiting >= Conf.QUEUE_LIMIT
        legitimate = waiting + (Conf.BULK if full else 0)
        older = unstarted[: max(0, len(unstarted) - legitimate)]
        return older, len(unstarted) <= waiting
