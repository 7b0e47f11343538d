"""The cluster's start-up recovery hangs on django-q2's call shape: a
Sentinel's start() calls `self.broker.ping()` first, before it forks anything,
and codex.core.workers.brokers finds that Sentinel two frames up (django-q2 has no
start-up hook). If a django-q2 upgrade changes that, these tests fail loudly
instead of clusters starting without recovery, beats or a graceful stop."""

from __future__ import annotations

import signal
import uuid
from multiprocessing import Event

import pytest
from django_q.cluster import Sentinel

from codex.core.workers import brokers
from codex.core.workers.brokers import ClaimingORM


class RecordingKeeper:
    """Stands in for ClusterKeeper: records what it was made with."""

    made: list[tuple] = []

    def __init__(self, broker, sentinel) -> None:
        RecordingKeeper.made.append((broker, sentinel))

    def start(self) -> None:
        pass

    def tick(self) -> None:
        pass


@pytest.fixture
def sentinel_parts(monkeypatch):
    """A Sentinel that runs start() up to the broker's ping only."""
    RecordingKeeper.made = []
    monkeypatch.setattr(
        "codex.core.workers.cluster_recovery.ClusterKeeper",
        RecordingKeeper,
        raising=True,
    )
    monkeypatch.setattr(Sentinel, "spawn_cluster", lambda self: None)
    monkeypatch.setattr(Sentinel, "guard", lambda self: None)
    monkeypatch.setattr(brokers, "_cluster_broker", None)
    handlers = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    yield
    signal.signal(signal.SIGINT, handlers[0])
    signal.signal(signal.SIGTERM, handlers[1])


@pytest.mark.django_db
def test_a_starting_sentinel_is_found_from_the_brokers_ping(sentinel_parts):
    broker = ClaimingORM()
    sentinel = Sentinel(Event(), Event(), uuid.uuid4(), broker=broker)

    assert RecordingKeeper.made == [(broker, sentinel)], (
        "django-q2's Sentinel.start() no longer calls broker.ping() directly: "
        "codex.core.workers.brokers._calling_sentinel must follow its new call shape"
    )
    assert brokers._cluster_broker is broker


@pytest.mark.django_db
def test_a_ping_from_anywhere_else_starts_no_keeper(sentinel_parts):
    broker = ClaimingORM()

    broker.ping()

    assert RecordingKeeper.made == []
    assert broker.keeper is None
