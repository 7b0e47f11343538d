"""A worker killed after it took a job from its cluster's queue and before it
claimed it as started leaves the job claimed by a live cluster and run by
nobody: UnstartedJobWatch hands it back to the front of the queue, and only
it, on both brokers (codex.core.workers.queue_lock)."""

from __future__ import annotations

import os
import signal
import threading
from dataclasses import dataclass, field
from types import SimpleNamespace

import pytest
import redis
from django_q.conf import Conf
from django_q.queues import Queue

from codex.core.workers.brokers import ClaimingORM
from codex.core.workers.cluster_recovery import ClusterKeeper
from codex.core.workers.queue_lock import IDLE, UnstartedJobWatch, reading
from codex.core.workers.redis_broker import ClaimingRedis
from tests.core.forked_readers import start_reader, wait_until
from tests.workers.live.brokers import REDIS_TEST_URL, empty_redis_test_db


class TestRedis(ClaimingRedis):
    """The claiming Redis broker on the test Redis database."""

    __test__ = False

    @staticmethod
    def get_connection(list_key: str | None = None) -> redis.Redis:
        return redis.from_url(REDIS_TEST_URL)


@pytest.fixture(params=["orm", "redis"])
def broker(request):
    if request.param == "orm":
        request.getfixturevalue("db")
        yield ClaimingORM(list_key="lost-jobs")
        return
    with empty_redis_test_db():
        yield TestRedis(list_key="lost-jobs")


@pytest.fixture(autouse=True)
def production_queue(monkeypatch):
    # Codex's clusters: a queue of one job, and one job per take.
    monkeypatch.setattr(Conf, "QUEUE_LIMIT", 1)
    monkeypatch.setattr(Conf, "BULK", 1)


def take(broker, name: str):
    """Queue a job and take it for the broker's cluster, as its pusher does."""
    broker.enqueue(name)
    ((ack_id, _),) = broker.dequeue()
    return ack_id


def worker_in_the_window(task_queue: Queue) -> int:
    """A process that takes one job like a django-q2 worker and stops before
    claiming it (where a kill loses it); returns once it holds the job."""
    ready_read, ready_write = os.pipe()
    pid = os.fork()
    if pid == 0:
        task_queue.get()
        os.write(ready_write, b"x")
        signal.pause()
        os._exit(0)
    os.close(ready_write)
    assert os.read(ready_read, 1) == b"x"
    os.close(ready_read)
    return pid


def a_process_to_kill() -> int:
    """A process to kill, for the watch's trigger."""
    pid = os.fork()
    if pid == 0:
        signal.pause()
        os._exit(0)
    return pid


def killed_idle(pid: int) -> SimpleNamespace:
    """SIGKILL `pid`; how the sentinel sees the worker afterwards."""
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return SimpleNamespace(exitcode=-signal.SIGKILL, timer=SimpleNamespace(value=IDLE))


def cluster_with_a_lost_job(broker):
    """Three jobs taken in turn: the first by a worker then killed, the second
    in the queue, the third held by the pusher (the queue is full)."""
    task_queue = Queue(maxsize=1)
    lost = take(broker, "lost")
    task_queue.put({"ack_id": lost})
    dead = killed_idle(worker_in_the_window(task_queue))
    queued = take(broker, "queued")
    task_queue.put({"ack_id": queued})
    held = take(broker, "held by the pusher")
    return task_queue, dead, lost, queued, held


def test_the_lost_job_goes_back_to_the_front_of_the_queue(broker):
    task_queue, dead, lost, queued, held = cluster_with_a_lost_job(broker)
    assert broker.unstarted(broker.claim) == [lost, queued, held]
    watch = UnstartedJobWatch(broker, task_queue)
    watch.worker_ended(dead)

    assert watch.look() == 0  # one look is not enough
    assert watch.look() == 1

    assert broker.unstarted(broker.claim) == [queued, held]
    other = type(broker)(list_key="lost-jobs")
    assert other.dequeue()[0][0] == lost, "first in the queue again"
    assert watch.look() == 0  # handed back once


def test_without_the_watch_the_lost_job_stays_claimed(broker):
    """The control: nothing else returns it while the cluster lives."""
    task_queue, dead, lost, queued, held = cluster_with_a_lost_job(broker)
    assert broker.hand_back(broker.claim, pids=set(), unstarted=False) == 0
    assert lost in broker.unstarted(broker.claim)
    assert type(broker)(list_key="lost-jobs").dequeue() is None


def test_a_worker_killed_while_it_waited_took_nothing(broker):
    task_queue = Queue(maxsize=1)
    _, done_write = os.pipe()
    pid = start_reader(task_queue, done_write)
    assert wait_until(lambda: reading(pid, task_queue._reader.fileno()))
    dead = killed_idle(pid)
    queued = take(broker, "queued")
    task_queue.put({"ack_id": queued})
    held = take(broker, "held by the pusher")
    watch = UnstartedJobWatch(broker, task_queue)
    watch.worker_ended(dead)

    for _ in range(3):
        assert watch.look() == 0
    assert broker.unstarted(broker.claim) == [queued, held]


def test_a_job_a_live_worker_starts_between_the_looks_stays_its(broker):
    task_queue = Queue(maxsize=1)
    starting = take(broker, "starting")
    task_queue.put({"ack_id": starting})
    assert task_queue.get(timeout=5)["ack_id"] == starting  # a live worker has it
    watch = UnstartedJobWatch(broker, task_queue)
    watch.worker_ended(killed_idle(a_process_to_kill()))

    assert watch.look() == 0
    assert broker.start_claim(starting, os.getpid())  # it claims it meanwhile
    assert watch.look() == 0
    assert broker.started_pids(broker.claim) == {os.getpid()}


def test_only_a_worker_that_died_idle_makes_it_look(broker):
    watch = UnstartedJobWatch(broker, Queue(maxsize=1))
    busy = SimpleNamespace(exitcode=-signal.SIGKILL, timer=SimpleNamespace(value=30))
    recycled = SimpleNamespace(exitcode=0, timer=SimpleNamespace(value=IDLE))
    for process in (busy, recycled):
        watch.worker_ended(process)
    assert watch.suspect is False
    # An error between taking a job and claiming it loses the job too.
    watch.worker_ended(SimpleNamespace(exitcode=1, timer=SimpleNamespace(value=IDLE)))
    assert watch.suspect is True


def started_by_a_live_worker(broker, task_queue: Queue) -> None:
    """A live worker takes the next job from the queue and claims it."""
    assert broker.start_claim(task_queue.get(timeout=5)["ack_id"], os.getpid())


def test_a_lost_job_behind_a_full_queue_is_found_once_the_queue_moves(broker):
    """With the queue full, a job older than it could be the pusher's: it is
    handed back once a worker takes the queued one, not given up on."""
    task_queue = Queue(maxsize=1)
    lost = take(broker, "lost")
    task_queue.put({"ack_id": lost})
    dead = killed_idle(worker_in_the_window(task_queue))
    queued = take(broker, "queued")
    task_queue.put({"ack_id": queued})  # the pusher then waits for jobs
    watch = UnstartedJobWatch(broker, task_queue)
    watch.worker_ended(dead)
    for _ in range(3):
        assert watch.look() == 0
    assert watch.suspect is True

    started_by_a_live_worker(broker, task_queue)
    assert watch.look() == 0
    assert watch.look() == 1
    assert broker.unstarted(broker.claim) == []
    assert watch.look() == 0 and watch.suspect is False  # nothing left outside


def test_the_job_a_killed_pusher_held_goes_back(broker):
    task_queue = Queue(maxsize=1)
    queued = take(broker, "queued")
    task_queue.put({"ack_id": queued})
    held = take(broker, "held by the pusher when it was killed")
    watch = UnstartedJobWatch(broker, task_queue)
    watch.pusher_ended(SimpleNamespace(exitcode=-signal.SIGKILL))
    for _ in range(2):
        assert watch.look() == 0  # the queue is full: it could be a live pusher's

    started_by_a_live_worker(broker, task_queue)
    assert watch.look() == 0
    assert watch.look() == 1
    assert broker.unstarted(broker.claim) == []
    assert type(broker)(list_key="lost-jobs").dequeue()[0][0] == held


def test_a_pusher_that_stopped_by_itself_is_no_suspect(broker):
    watch = UnstartedJobWatch(broker, Queue(maxsize=1))
    watch.pusher_ended(SimpleNamespace(exitcode=0))
    assert watch.suspect is False


def test_a_reader_killed_while_unpickling_does_not_hide_a_lost_job(broker):
    """django-q2's own count of the queue lowers only after get() unpickled
    the job; the watch counts by the queue's semaphore."""
    task_queue, dead, lost, queued, held = cluster_with_a_lost_job(broker)
    task_queue.size.increment(1)  # a count left one too high
    watch = UnstartedJobWatch(broker, task_queue)
    watch.worker_ended(dead)
    assert watch.look() == 0
    assert watch.look() == 1
    assert lost not in broker.unstarted(broker.claim)


def test_a_failed_hand_back_is_tried_again(broker, monkeypatch):
    task_queue, dead, lost, queued, held = cluster_with_a_lost_job(broker)
    watch = UnstartedJobWatch(broker, task_queue)
    watch.worker_ended(dead)
    assert watch.look() == 0
    real = broker.hand_back_jobs

    def broken(claim, ack_ids):
        raise OSError("the broker went away")

    monkeypatch.setattr(broker, "hand_back_jobs", broken)
    with pytest.raises(OSError):
        watch.look()
    monkeypatch.setattr(broker, "hand_back_jobs", real)
    assert watch.look() == 1


def test_a_copy_started_after_its_hand_back_is_not_acknowledged(broker, monkeypatch):
    """Its row may be this cluster's again by the time the monitor gets the
    stale copy's result: acknowledging it would delete the copy to run."""
    from codex.core.workers import brokers

    job = take(broker, "handed back before it started")
    assert broker.hand_back_jobs(broker.claim, [job]) == 1
    monkeypatch.setattr(brokers, "_cluster_broker", broker)
    monkeypatch.setitem(brokers._current, "handed_back", False)
    stale = {"ack_id": job, "name": "stale copy"}
    brokers._on_job_start(None, task=stale)
    assert brokers.job_handed_back() is True

    ((again, _),) = broker.dequeue()  # this cluster takes it anew
    ack_id = stale.pop("ack_id", False)  # what django-q2's monitor does
    if ack_id:
        broker.acknowledge(ack_id)
    assert broker.unstarted(broker.claim) == [again]


@dataclass
class Process:
    """A sentinel's child process as the keeper sees it."""

    pid: int
    exitcode: int | None = None
    timer: SimpleNamespace = field(default_factory=lambda: SimpleNamespace(value=-1))

    def is_alive(self) -> bool:
        return self.exitcode is None


def keeper_of(broker, task_queue: Queue, **processes) -> ClusterKeeper:
    sentinel = SimpleNamespace(
        task_queue=task_queue, stop_event=threading.Event(), **processes
    )
    keeper = ClusterKeeper(broker, sentinel)
    keeper.tick()  # sees its processes
    return keeper


@pytest.mark.django_db
def test_the_cluster_keeper_hands_it_back_within_two_cycles(broker):
    task_queue, dead, lost, queued, held = cluster_with_a_lost_job(broker)
    worker = Process(pid=4242)
    keeper = keeper_of(broker, task_queue, pool=[worker], pusher=Process(4243))
    worker.exitcode = dead.exitcode
    keeper.sentinel.pool.remove(worker)

    keeper.tick()  # the death, and the first look
    assert lost in broker.unstarted(broker.claim)
    keeper.tick()

    assert broker.unstarted(broker.claim) == [queued, held]


@pytest.mark.django_db
def test_the_cluster_keeper_looks_after_its_pusher_was_killed(broker):
    task_queue = Queue(maxsize=1)
    queued = take(broker, "queued")
    task_queue.put({"ack_id": queued})
    held = take(broker, "held by the pusher when it was killed")
    pusher = Process(pid=4243)
    keeper = keeper_of(broker, task_queue, pool=[], pusher=pusher)
    assert keeper.unstarted.suspect is False
    pusher.exitcode = -signal.SIGKILL
    keeper.sentinel.pusher = Process(pid=4244)  # the sentinel's new one

    keeper.tick()
    assert keeper.unstarted.suspect is True
    started_by_a_live_worker(broker, task_queue)
    keeper.tick()
    keeper.tick()

    assert broker.unstarted(broker.claim) == []
    assert type(broker)(list_key="lost-jobs").dequeue()[0][0] == held
