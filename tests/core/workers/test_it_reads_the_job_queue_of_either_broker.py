"""The job queue as monitoring reads it (codex.core.workers.snapshot), on both
claiming brokers: jobs waiting and the oldest one's enqueue time; per
cluster the jobs it took and those it runs."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
import redis
from django.utils import timezone
from django_q.signing import SignedPackage

from codex.core.workers.brokers import ClaimingORM
from codex.core.workers.redis_broker import ClaimingRedis
from codex.core.workers.snapshot import queue_snapshot
from tests.workers.live.brokers import REDIS_TEST_URL


class TestRedis(ClaimingRedis):
    __test__ = False

    @staticmethod
    def get_connection(list_key: str | None = None) -> redis.Redis:
        return redis.from_url(REDIS_TEST_URL)


@pytest.fixture(params=["orm", "redis"])
def broker(request):
    # A list key of its own: the test Redis database is shared, never flushed.
    key = f"snapshot-{uuid.uuid4().hex[:8]}"
    if request.param == "orm":
        request.getfixturevalue("db")
        yield ClaimingORM(list_key=key)
        return
    client = redis.from_url(REDIS_TEST_URL, socket_connect_timeout=2)
    try:
        client.ping()
    except redis.RedisError as exc:
        pytest.skip(f"Redis is not reachable at {REDIS_TEST_URL}: {exc}")
    broker = TestRedis(list_key=key)
    yield broker
    for name in client.scan_iter(f"{key}*"):
        client.delete(name)
    client.close()


def job(minutes_ago: int) -> str:
    return SignedPackage.dumps(
        {
            "id": uuid.uuid4().hex,
            "started": timezone.now() - timedelta(minutes=minutes_ago),
        }
    )


def test_waiting_taken_and_running_jobs(broker):
    assert queue_snapshot(broker).waiting == 0
    broker.enqueue(job(7))
    broker.enqueue(job(3))
    broker.enqueue(job(1))
    snapshot = queue_snapshot(broker)
    assert snapshot.waiting == 3
    assert 420 <= snapshot.oldest_age_seconds() < 480
    ((first, _),) = broker.dequeue()  # the oldest, taken by this cluster
    ((second, _),) = broker.dequeue()
    assert broker.start_claim(second, 4242)
    snapshot = queue_snapshot(broker)
    assert snapshot.waiting == 1
    assert 60 <= snapshot.oldest_age_seconds() < 120
    assert snapshot.taken == {broker.claim: 1}
    assert snapshot.running == {broker.claim: 1}
