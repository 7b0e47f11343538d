"""Fixtures of the live-worker tests: files shared with the workers, clusters
that are always killed at the end, and control over where the test enqueues."""

from __future__ import annotations

import pytest

from tests.jobs import route_enqueues
from tests.workers.live.cluster import Clusters, Files


@pytest.fixture
def files(tmp_path) -> Files:
    return Files(
        side_effect_log=tmp_path / "side_effects.log", run_log=tmp_path / "runs.log"
    )


@pytest.fixture
def clusters(transactional_db, tmp_path):
    """Start clusters with `clusters.start(env)`; every one of them is SIGKILLed
    when the test ends, passed or failed, before the database is
    flushed. The seeded schedules (core.0002) are removed first: these tests
    are about the steps they enqueue, not about what the scheduler adds."""
    from django_q.models import Schedule

    Schedule.objects.all().delete()
    started = Clusters(directory=tmp_path)
    try:
        yield started
    finally:
        started.cleanup()


@pytest.fixture
def enqueue_via(monkeypatch):
    """Route every enqueue of the test process (make_task's first step too) to a
    given django-q broker object, whatever the test settings' broker is."""

    def route(broker):
        return route_enqueues(monkeypatch, broker)

    return route


@pytest.fixture(params=["orm", "redis"])
def broker(request, enqueue_via):
    """Each test using it runs on both brokers: (kind, broker, Redis client or
    None); the Redis test database is emptied before and after."""
    from django_q.brokers.orm import ORM

    from tests.workers.live.brokers import TestRedisBroker, empty_redis_test_db

    if request.param == "orm":
        yield "orm", enqueue_via(ORM()), None
        return
    with empty_redis_test_db() as client:
        yield "redis", enqueue_via(TestRedisBroker()), client
