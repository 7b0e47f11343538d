"""Both brokers for the live-worker tests: the ORM one and Redis (the test
database 15 on 127.0.0.1:6379), and what clusters hold in each."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import redis
from django_q.brokers.redis_broker import Redis as RedisBroker
from django_q.models import OrmQ

from tests.workers.live.cluster import Files, worker_env

REDIS_TEST_URL = "redis://127.0.0.1:6379/15"
# Default settings: the test harness's short leases and retries are removed.
DEFAULTED = (
    "CODEX_JOB_TIMEOUT",
    "CODEX_JOB_RETRY",
    "CODEX_LEASE_SECONDS",
    "CODEX_HEARTBEAT_SECONDS",
)


class TestRedisBroker(RedisBroker):
    """django-q's Redis broker on the test Redis database."""

    __test__ = False

    @staticmethod
    def get_connection(list_key: str | None = None) -> redis.Redis:
        return redis.from_url(REDIS_TEST_URL)


@contextmanager
def empty_redis_test_db() -> Iterator[redis.Redis]:
    """A client of the test Redis database, emptied before and after; the
    test is skipped when Redis is not reachable."""
    client = redis.from_url(REDIS_TEST_URL, socket_connect_timeout=2)
    try:
        client.ping()
    except redis.RedisError as exc:
        pytest.skip(f"Redis is not reachable at {REDIS_TEST_URL}: {exc}")
    client.flushdb()
    try:
        yield client
    finally:
        client.flushdb()
        client.close()


def default_env(files: Files, tmp_path, kind: str, **options) -> dict[str, str]:
    """A worker's environment on broker `kind` with Codex's default timeouts,
    retries and leases (not the harness's short ones)."""
    env = worker_env(
        files,
        redis_url=REDIS_TEST_URL if kind == "redis" else None,
        var_dir=tmp_path,
        **options,
    )
    for name in DEFAULTED:
        env.pop(name, None)
    return env


def held(kind: str, client) -> int:
    """How many jobs clusters have claimed (taken, started or not)."""
    if kind == "orm":
        return OrmQ.objects.filter(key__startswith="codex@").count()
    total = 0
    for key in client.keys("django_q:codex:q:@*"):
        kind_of = client.type(key)
        total += client.llen(key) if kind_of == b"list" else client.hlen(key)
    return total
