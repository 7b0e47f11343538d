"""A worker killed while it waits for a job dies holding its cluster's task
queue's reader lock (multiprocessing.Queue.get holds it while it blocks):
ReaderLockWatch releases it, and only then (codex.core.workers.queue_lock)."""

from __future__ import annotations

import os
import platform
import signal
import time
from types import SimpleNamespace

import pytest
from django_q.queues import Queue

from codex.core.workers.queue_lock import IDLE, ReaderLockWatch, read_syscall, reading
from tests.core.forked_readers import items_done, start_reader, wait_until

pytestmark = pytest.mark.skipif(
    not os.path.exists("/proc/self/syscall"), reason="needs /proc/<pid>/syscall"
)


@pytest.fixture
def two_waiting_workers():
    task_queue = Queue(maxsize=1)
    done_read, done_write = os.pipe()
    os.set_blocking(done_read, False)
    pids = [start_reader(task_queue, done_write) for _ in range(2)]
    fd = task_queue._reader.fileno()
    holder = wait_until(lambda: [pid for pid in pids if reading(pid, fd)])
    assert holder, "no worker is waiting in read(2) on the queue"
    yield task_queue, pids, holder[0], done_read
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass


def kill(pid: int) -> SimpleNamespace:
    """SIGKILL `pid`; how the sentinel sees it afterwards."""
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return SimpleNamespace(exitcode=-signal.SIGKILL, timer=SimpleNamespace(value=IDLE))


def test_a_killed_waiting_worker_stalls_the_queue_until_the_lock_is_released(
    two_waiting_workers,
):
    task_queue, pids, holder, done_read = two_waiting_workers
    watch = ReaderLockWatch(task_queue)
    watch.worker_ended(kill(holder))
    (survivor,) = set(pids) - {holder}
    task_queue.put("job-1")
    time.sleep(0.5)
    assert items_done(done_read) == ""  # the control: the lock died with it

    assert watch.look([survivor]) is False  # one look is not enough
    assert watch.look([survivor]) is True
    assert wait_until(lambda: items_done(done_read)) == "job-1\n"
    assert watch.look([survivor]) is False  # done, nothing more to release


def test_a_killed_worker_that_did_not_hold_the_lock_leaves_it_alone(
    two_waiting_workers,
):
    task_queue, pids, holder, done_read = two_waiting_workers
    (other,) = set(pids) - {holder}
    watch = ReaderLockWatch(task_queue)
    watch.worker_ended(kill(other))  # it waited for the lock, held nothing
    for _ in range(3):
        assert watch.look([holder]) is False
    task_queue.put("job-1")
    assert wait_until(lambda: items_done(done_read)) == "job-1\n"
    # The lock is the live worker's again, not released twice.
    assert wait_until(lambda: reading(holder, task_queue._reader.fileno()))


def test_nothing_is_released_while_no_job_waits(two_waiting_workers):
    task_queue, pids, holder, done_read = two_waiting_workers
    (survivor,) = set(pids) - {holder}
    watch = ReaderLockWatch(task_queue)
    watch.worker_ended(kill(holder))
    for _ in range(3):
        assert watch.look([survivor]) is False
    assert not task_queue._rlock.acquire(False)  # still the dead worker's


def test_a_worker_that_ended_busy_or_by_itself_is_no_suspect(two_waiting_workers):
    task_queue, pids, holder, done_read = two_waiting_workers
    watch = ReaderLockWatch(task_queue)
    busy = SimpleNamespace(exitcode=-signal.SIGKILL, timer=SimpleNamespace(value=30))
    recycled = SimpleNamespace(exitcode=0, timer=SimpleNamespace(value=IDLE))
    for process in (busy, recycled):
        watch.worker_ended(process)
    assert watch.suspect is False


def test_it_learns_what_a_blocked_read_looks_like_on_this_machine():
    # read(2) is 0 on x86-64 and 63 on arm64: a number assumed for one would
    # take a live reader for none on the other, and release its lock.
    known = {"x86_64": "0", "aarch64": "63"}
    assert read_syscall() == known.get(platform.machine(), read_syscall())
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.read(read_end, 1)
        os._exit(0)
    try:
        assert wait_until(lambda: reading(pid, read_end))
        assert reading(pid, write_end) is False
    finally:
        os.write(write_end, b"x")
        os.waitpid(pid, 0)
    assert reading(pid, read_end) is False  # gone: it reads nothing


def test_a_failure_to_learn_it_is_not_remembered(monkeypatch):
    from codex.core.workers import queue_lock

    answers = iter([None, "0"])
    monkeypatch.setattr(queue_lock, "_read_syscall", None)
    monkeypatch.setattr(queue_lock, "_learn_read_syscall", lambda: next(answers))
    assert read_syscall() is None  # a machine too busy this once
    assert read_syscall() == "0"
    assert read_syscall() == "0"  # learnt: asked no more
