"""A worker cluster reports what it finds of its own machine (CODEX_WORKER_
HEALTH: its jail, its model key) when it registers and every CODEX_CLUSTER_
HEALTH_SECONDS with its beat, so the console judges the workers' machines,
not the web server's. A failing check is reported as such, and the cluster
runs on."""

from __future__ import annotations

import time
from multiprocessing import Event
from types import SimpleNamespace

import pytest

from codex.core.workers.brokers import ClaimingORM
from codex.core.workers.cluster_recovery import ClusterKeeper
from codex.core.workers.clusters import WorkerCluster
from codex.fleet.readiness import worker_report

# start() closes the connections a fork must not inherit: no test transaction.
pytestmark = pytest.mark.django_db(transaction=True)

reports = [{"jail": {"backend": "bubblewrap", "problem": "first"}}]


def report() -> dict:
    return reports[-1]


def broken() -> dict:
    raise RuntimeError("no /proc")


@pytest.fixture
def keeper(monkeypatch, settings):
    settings.CODEX_WORKER_HEALTH = f"{__name__}.report"
    monkeypatch.setattr(ClusterKeeper, "_run_schedules", lambda self: None)
    monkeypatch.setattr(ClusterKeeper, "_warm_up", staticmethod(lambda: None))
    for watch in ("_watch_the_monitor", "_watch_the_pusher", "_neighbour_died"):
        monkeypatch.setattr(ClusterKeeper, watch, lambda self: False)
    keeper = ClusterKeeper(ClaimingORM(), None)
    # What tick() reads of a sentinel, once the keeper is made.
    keeper.sentinel = SimpleNamespace(stop_event=Event(), pool=[])
    return keeper


def test_it_registers_with_its_report(keeper):
    keeper.start()
    cluster = WorkerCluster.objects.get(claim=keeper.broker.claim)
    assert cluster.health == {"jail": {"backend": "bubblewrap", "problem": "first"}}
    assert cluster.health_at is not None


def test_a_beat_after_the_interval_carries_a_new_report(keeper, settings):
    keeper.start()
    reports.append({"jail": {"backend": "bubblewrap", "problem": ""}})
    try:
        keeper.tick()  # within the interval: the beat alone
        cluster = WorkerCluster.objects.get(claim=keeper.broker.claim)
        assert cluster.health["jail"]["problem"] == "first"
        keeper.last_health = time.monotonic() - settings.CODEX_CLUSTER_HEALTH_SECONDS
        keeper.tick()
        cluster.refresh_from_db()
        assert cluster.health["jail"]["problem"] == ""
    finally:
        reports.pop()


def test_a_failing_check_is_reported_and_the_cluster_registers(keeper, settings):
    settings.CODEX_WORKER_HEALTH = f"{__name__}.broken"
    keeper.start()
    cluster = WorkerCluster.objects.get(claim=keeper.broker.claim)
    assert cluster.health == {
        "error": "the health check failed: RuntimeError: no /proc"
    }


def test_the_default_report_probes_this_machines_jail(settings):
    settings.CODEX_SANDBOX = "none"
    settings.CODEX_CREDENTIALS = {"claude": ["sk-test"]}
    report = worker_report()
    assert report["jail"]["backend"] == "none"
    assert report["jail"]["jailed"] is False
    assert report["model_key"] is True
    assert report["phase_runner"] == settings.CODEX_PHASE_RUNNER
