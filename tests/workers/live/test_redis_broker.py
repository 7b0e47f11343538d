"""Live workers on the Redis broker (REDIS_URL set).

django-q2's own Redis broker has no receipts: its `dequeue` is a BLPOP, so a
step taken by a cluster that then dies was lost. Codex's ClaimingRedis
(codex.core.workers.brokers) moves a taken step to the cluster's own list instead
(BLMOVE) and, once a worker starts it, to the cluster's hash of started steps;
the step leaves Redis only when it is acknowledged. A cluster that starts (or
any live one, within its sweep) hands a dead cluster's steps back to the queue
after freeing the dead worker's lease: the second test shows the step back at
once, and that the re-run phase finds its side effect by lookup instead of
repeating it. (The tests delete the seeded schedules, so no scheduled job
interferes here.)

The test process enqueues straight onto the workers' Redis list through a
django-q Redis broker object bound to REDIS_TEST_URL (the test settings may use
the ORM broker); make_task's own enqueue is routed there as well.
"""

from __future__ import annotations

import time

import pytest
import redis

from codex.core.store.side_effects import SideEffect
from tests.factories import make_task
from tests.workers.live.brokers import (
    REDIS_TEST_URL,
    TestRedisBroker,
    empty_redis_test_db,
)
from tests.workers.live.cluster import JOB_RETRY, wait_for, worker_env
from tests.workers.live.helpers import (
    all_completed,
    assert_no_concurrent_runs,
    assert_side_effects_once,
    completions,
)
from tests.workers.live.side_effect_runner import side_effect_key

pytestmark = [pytest.mark.postgresql, pytest.mark.django_db(transaction=True)]

ADVANCE_JOB = "codex.tasks.jobs.advance_task"


@pytest.fixture
def redis_broker(enqueue_via):
    with empty_redis_test_db():
        yield enqueue_via(TestRedisBroker())


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


def test_sigkill_mid_step_hands_the_step_back_when_a_cluster_starts(
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
    task = make_task(title="Kept over Redis")
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
    client = redis.from_url(REDIS_TEST_URL)
    started = list(client.keys("django_q:codex:q:@*:started"))
    assert len(started) == 1, "the dead cluster's claim still holds the step"

    # A fresh cluster hands the dead one's step back before it takes work: the
    # phase re-runs long before the dead worker's lease would have expired, and
    # finds the pull request by lookup instead of opening a second one.
    second = clusters.start(env)
    wait_for(
        lambda: all_completed([task.task_id]),
        JOB_RETRY,
        "the handed-back task to complete",
        clusters=clusters,
        while_alive=[second],
    )
    implementation_runs = [r for r in files.runs() if r["phase"] == "implementation"]
    assert implementation_runs[0]["end"] is None, "the first run was cut short"
    assert completions(task) == 1
    assert_side_effects_once(files, [task.task_id])
    assert_no_concurrent_runs(files, killed_at)
    assert SideEffect.objects.get(
        key=side_effect_key(task.task_id, "implementation")
    ).found_by_lookup
    # The task's last jobs (its clean-up) may still be acknowledging.
    wait_for(
        lambda: not client.keys("django_q:codex:q:@*"),
        30,
        "no claim to be left behind",
        clusters=clusters,
        while_alive=[second],
    )
