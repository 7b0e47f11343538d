"""Live workers on the Redis broker (REDIS_URL set): at-most-once delivery.

django-q2's Redis broker has no receipts. `dequeue` is a BLPOP: the step leaves
the Redis list the moment the cluster's pusher takes it, and `acknowledge` does
nothing. Nothing remembers a step that a worker has taken, so when the worker
(or the whole cluster) dies mid-step, that step is lost: no other worker and no
restarted cluster will ever run it. CODEX_JOB_RETRY means nothing here.

For Codex that leaves the task `in_progress` in its phase, with the dead
worker's lease on the row (expired after CODEX_LEASE_SECONDS), and no step in
any queue: it moves again only when something enqueues advance_task for it.
That is what the scheduled recovery jobs are for: the stale-work reaper
(codex.fleet.heartbeats.reap_stale_work: the step's agent run stopped beating
for CODEX_HEARTBEAT_STALE_SECONDS) and the stuck-task recovery
(codex.tasks.recovery: CODEX_STUCK_AFTER_MINUTES in one phase). Under Redis
they are the only way back, so they must stay scheduled. The second test
proves the loss, and that a re-enqueue is all it takes: the re-run phase finds
its side effect by lookup instead of repeating it. (The tests delete the
seeded schedules, so neither job interferes here.)

The test process enqueues straight onto the workers' Redis list through a
django-q Redis broker object bound to REDIS_TEST_URL (the test settings may use
the ORM broker); make_task's own enqueue is routed there as well.
"""

from __future__ import annotations

import time

import pytest
import redis
from django.utils import timezone
from django_q.brokers.redis_broker import Redis as RedisBroker
from django_q.tasks import async_task

from codex.core.models import SideEffect
from codex.tasks.models import Phase, Status
from tests.factories import make_task
from tests.workers_live.cluster import JOB_RETRY, LEASE_SECONDS, wait_for, worker_env
from tests.workers_live.helpers import (
    all_completed,
    assert_no_concurrent_runs,
    assert_side_effects_once,
    completions,
)
from tests.workers_live.side_effect_runner import side_effect_key

pytestmark = [pytest.mark.postgresql, pytest.mark.django_db(transaction=True)]

REDIS_TEST_URL = "redis://127.0.0.1:6379/15"
ADVANCE_JOB = "codex.tasks.jobs.advance_task"


class TestRedisBroker(RedisBroker):
    """django-q's Redis broker, on the test Redis database whatever Q_CLUSTER
    of the test process says."""

    __test__ = False  # not a test class, despite its name

    @staticmethod
    def get_connection(list_key: str | None = None) -> redis.Redis:
        return redis.from_url(REDIS_TEST_URL)


@pytest.fixture
def redis_broker(enqueue_via):
    client = redis.from_url(REDIS_TEST_URL, socket_connect_timeout=2)
    try:
        client.ping()
    except redis.RedisError as exc:
        pytest.skip(f"Redis is not reachable at {REDIS_TEST_URL}: {exc}")
    client.flushdb()
    try:
        yield enqueue_via(TestRedisBroker())
    finally:
        client.flushdb()
        client.close()


def test_a_step_enqueued_on_redis_runs_to_completion(
    clusters, files, redis_broker, tmp_path
):
    cluster = clusters.start(
        worker_env(files, workers=2, redis_url=REDIS_TEST_URL, var_dir=tmp_path)
    )
    task = make_task(title="Over Redis")  # its first step goes onto the Redis list
    wait_for(
        lambda: all_completed([task.task_id]),
        60,
        "the task to complete over Redis",
        clusters=clusters,
        while_alive=[cluster],
    )
    assert completions(task) == 1
    assert_side_effects_once(files, [task.task_id])
    assert redis_broker.queue_size() == 0


def test_sigkill_mid_step_loses_the_step_until_it_is_enqueued_again(
    clusters, files, redis_broker, tmp_path
):
    env = worker_env(
        files,
        workers=1,
        redis_url=REDIS_TEST_URL,
        sleep_seconds=3,
        sleep_phases=("implementation",),
        sleep_where="action",
        var_dir=tmp_path,
    )
    first = clusters.start(env)
    task = make_task(title="Lost over Redis")
    wait_for(
        files.side_effect_lines,
        60,
        "the worker inside the pull-request side effect",
        clusters=clusters,
        while_alive=[first],
    )
    first.kill()
    killed_at = time.time()
    assert redis_broker.queue_size() == 0, "the step left the list when taken"

    # A fresh cluster on the same broker, given longer than both the dead
    # worker's lease and the ORM broker's redelivery delay: nothing comes back.
    second = clusters.start(env)
    time.sleep(max(LEASE_SECONDS, JOB_RETRY) + 2 - (time.time() - killed_at))
    assert second.alive()
    task.refresh_from_db()
    assert (task.status, task.phase) == (Status.IN_PROGRESS, Phase.IMPLEMENTATION)
    assert task.lease_holder, "the dead worker's lease is still on the row"
    assert task.lease_expires_at < timezone.now(), "and it has expired"
    assert redis_broker.queue_size() == 0
    implementation_runs = [r for r in files.runs() if r["phase"] == "implementation"]
    assert len(implementation_runs) == 1, "the lost step never ran again"
    assert implementation_runs[0]["end"] is None

    # What recovery does: enqueue the step again. The phase re-runs and finds
    # the pull request by lookup instead of opening a second one.
    async_task(ADVANCE_JOB, task.task_id)
    wait_for(
        lambda: all_completed([task.task_id]),
        60,
        "the re-enqueued task to complete",
        clusters=clusters,
        while_alive=[second],
    )
    assert completions(task) == 1
    assert_side_effects_once(files, [task.task_id])
    assert_no_concurrent_runs(files, killed_at)
    assert SideEffect.objects.get(
        key=side_effect_key(task.task_id, "implementation")
    ).found_by_lookup
