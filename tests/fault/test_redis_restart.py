"""The Redis broker restarted mid-run: documented behaviour (README, "Broker
restarts"), tested.

A private redis-server without persistence (`--save "" --appendonly no`, the
shared one on 6379 is never touched) is the broker of one worker cluster
(`manage.py qcluster`, REDIS_URL set). Five tasks are queued; while steps wait
in the Redis list, Redis is restarted and its memory, with those steps, is
gone. What the test proves:

- the cluster survives without a restart of its own: redis-py reconnects its
  pusher's BLPOP (and, if that fails for longer, the sentinel reincarnates the
  pusher); the re-queued steps below are run by the same cluster;
- the steps that were in Redis are lost: their tasks stop moving, nothing is
  queued for them (at-most-once, as tests/workers/live/test_redis_broker.py
  shows for a killed worker);
- the recovery jobs bring every one of them back: the stuck-task recovery
  (codex.tasks.recovery, which also covers a pending task whose first step
  was lost) and the stale-work reaper (codex.fleet.heartbeats), run here as
  the scheduler would, with short thresholds; every task completes once and
  every side effect is made once.
"""

from __future__ import annotations

import contextlib
import time
from datetime import timedelta

import pytest
import redis
from django_q.brokers.redis_broker import Redis as RedisBroker
from django_q.signing import SignedPackage

from codex.fleet.heartbeats import reap_stale_work
from codex.tasks import recovery
from codex.tasks.models import Status, Task
from codex.tasks.recovery import recover_stuck_tasks
from tests.factories import make_task
from tests.fault.services import PrivateRedis, wait_until
from tests.jobs import route_enqueues
from tests.workers.live.cluster import Clusters, Files, wait_for, worker_env
from tests.workers.live.helpers import assert_side_effects_once, completions

pytestmark = [pytest.mark.postgresql, pytest.mark.django_db(transaction=True)]

TASKS = 5


@pytest.fixture
def private_redis(tmp_path):
    server = PrivateRedis.create(tmp_path)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def broker(private_redis, monkeypatch):
    """django-q's Redis broker on the private server; every enqueue of the test
    process (make_task's first step, the recovery jobs') goes there."""
    url = private_redis.url

    class PrivateBroker(RedisBroker):
        @staticmethod
        def get_connection(list_key: str | None = None) -> redis.Redis:
            return redis.from_url(url)

    return route_enqueues(monkeypatch, PrivateBroker())


@pytest.fixture
def clusters(transactional_db, tmp_path):
    from django_q.models import Schedule

    Schedule.objects.all().delete()  # the test plays the scheduler itself
    started = Clusters(directory=tmp_path)
    try:
        yield started
    finally:
        started.cleanup()


def queued_task_ids(broker: RedisBroker) -> set[str]:
    """The tasks whose advance_task step waits in the Redis list now."""
    ids = set()
    for raw in broker.connection.lrange(broker.list_key, 0, -1):
        package = SignedPackage.loads(raw)
        if package["func"] == "codex.tasks.jobs.advance_task":
            ids.add(package["args"][0])
    return ids


def test_redis_restart_loses_queued_steps_and_recovery_requeues_them(
    private_redis, broker, clusters, tmp_path, settings, monkeypatch
):
    files = Files(
        side_effect_log=tmp_path / "side_effects.log", run_log=tmp_path / "runs.log"
    )
    env = worker_env(
        files,
        workers=1,
        redis_url=private_redis.url,
        sleep_seconds=0.5,
        sleep_phases=("intake", "implementation"),
        sleep_where="after",
        var_dir=tmp_path,
    )
    cluster = clusters.start(env)
    tasks = [make_task(title=f"Redis restart {n}") for n in range(TASKS)]
    task_ids = [task.task_id for task in tasks]

    # One worker takes one step at a time; the others wait in the Redis list.
    wait_for(
        lambda: files.run_entries_started() and broker.queue_size() >= 2,
        30,
        "steps running and steps waiting in Redis",
        clusters=clusters,
        while_alive=[cluster],
    )
    lost = queued_task_ids(broker)
    private_redis.restart()
    assert broker.queue_size() == 0, "the restarted Redis kept nothing"
    assert lost

    def done(ids) -> int:
        return Task.objects.filter(task_id__in=ids, status=Status.COMPLETED).count()

    # The tasks whose step was in memory (the worker's, the pusher's) go on
    # as soon as the cluster's pusher is back; the lost ones never move.
    others = [task_id for task_id in task_ids if task_id not in lost]
    restarted_at = time.time()
    with contextlib.suppress(AssertionError):  # a step enqueued in the instant
        # Redis was down is lost too: recovery below brings it back as well
        wait_until(lambda: done(others) == len(others), 40, "the other tasks")
    assert cluster.alive(), clusters.logs()
    assert done(lost) == 0
    assert not queued_task_ids(broker) & lost, "nothing is queued for them"

    # What the scheduler runs (every CODEX_EVERY_STUCK_RECOVERY_MINUTES and
    # CODEX_EVERY_HEARTBEAT_CHECK_MINUTES), with thresholds of seconds.
    # (The configured threshold is whole minutes: the test's is 3 seconds.)
    monkeypatch.setattr(recovery, "stuck_after", lambda: timedelta(seconds=3))
    settings.CODEX_HEARTBEAT_STALE_SECONDS = 3
    settings.CODEX_WORKTREE_ROOT = str(tmp_path / "worktrees")
    settings.CODEX_MIRROR_ROOT = str(tmp_path / "mirrors")

    def recovered() -> bool:
        if done(task_ids) == len(task_ids):
            return True
        reap_stale_work()
        recover_stuck_tasks()
        return False

    wait_for(
        recovered,
        60,
        "every task to complete after recovery",
        clusters=clusters,
        while_alive=[cluster],
        interval=1,
    )
    for task in tasks:
        assert completions(task) == 1, task.task_id
    assert_side_effects_once(files, task_ids)
    # The same cluster, reconnected, ran the lost tasks' steps after the restart.
    assert len(clusters.started) == 1 and cluster.alive()
    after = {run["task"] for run in files.runs() if run["start"] > restarted_at}
    assert lost <= after
