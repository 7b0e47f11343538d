"""django-q2's monitor is its cluster's one reader of the result queue and
waits in multiprocessing.Queue.get, holding the queue's reader lock: killed
then, the monitor the sentinel starts in its place would wait for the lock
for ever, and no job would be acknowledged again. The cluster's keeper
releases it (codex.core.workers.queue_lock, ClusterKeeper._watch_the_monitor)."""

from __future__ import annotations

import os
import signal
import threading
import time
from dataclasses import dataclass
from types import SimpleNamespace

import pytest
from django_q.queues import Queue

from codex.core.workers.cluster_recovery import ClusterKeeper
from codex.core.workers.queue_lock import reading
from tests.core.forked_readers import items_done, start_reader, wait_until

pytestmark = pytest.mark.skipif(
    not os.path.exists("/proc/self/syscall"), reason="needs /proc/<pid>/syscall"
)


@dataclass
class Monitor:
    """A forked reader of the result queue, as the sentinel sees it."""

    pid: int
    exitcode: int | None = None

    def is_alive(self) -> bool:
        return self.exitcode is None

    def kill(self) -> None:
        os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)
        self.exitcode = -signal.SIGKILL


def start_monitor(results: Queue, done_write: int) -> Monitor:
    return Monitor(start_reader(results, done_write))


@pytest.fixture
def cluster():
    """A keeper over a sentinel with a live monitor waiting for results."""
    results = Queue()
    done_read, done_write = os.pipe()
    os.set_blocking(done_read, False)
    first = start_monitor(results, done_write)
    fd = results._reader.fileno()
    assert wait_until(lambda: reading(first.pid, fd)), "the monitor is not waiting"
    sentinel = SimpleNamespace(
        pool=[],
        task_queue=None,
        result_queue=results,
        monitor=first,
        stop_event=threading.Event(),
    )
    keeper = ClusterKeeper(SimpleNamespace(claim="c1"), sentinel)
    keeper._watch_the_monitor()  # sees the first monitor
    started = [first]

    def replace_monitor(*, killed: bool) -> Monitor:
        """The monitor ends (killed, or by itself); the sentinel starts another."""
        if killed:
            first.kill()
        else:
            results.put("STOP")
            os.waitpid(first.pid, 0)
            first.exitcode = 0
        sentinel.monitor = start_monitor(results, done_write)
        started.append(sentinel.monitor)
        return sentinel.monitor

    yield keeper, results, replace_monitor, done_read
    for monitor in started:
        if monitor.is_alive():
            monitor.kill()


def test_the_monitor_in_a_killed_ones_place_gets_the_results(cluster):
    keeper, results, replace_monitor, done_read = cluster
    replace_monitor(killed=True)
    results.put("result-1")
    time.sleep(0.5)
    assert items_done(done_read) == ""  # the control: the lock died with it

    keeper._watch_the_monitor()  # sees the death, one look is not enough
    assert items_done(done_read) == ""
    keeper._watch_the_monitor()

    assert wait_until(lambda: items_done(done_read)) == "result-1\n"
    assert keeper.result_lock.suspect is False


def test_a_monitor_that_ended_by_itself_is_no_suspect(cluster):
    keeper, results, replace_monitor, done_read = cluster
    second = replace_monitor(killed=False)
    keeper._watch_the_monitor()
    assert keeper.result_lock.suspect is False
    results.put("result-1")
    assert wait_until(lambda: items_done(done_read)) == "result-1\n"
    assert wait_until(lambda: reading(second.pid, results._reader.fileno()))
