"""/healthz/workers: what each beating worker cluster reports (last beat,
jail, model key) with the jobs it took and runs, and what blocks every task;
200 when nothing does, 503 otherwise, so a probe can alert on it."""

from __future__ import annotations

import pytest
from django_q.models import OrmQ

from tests.factories import make_task, make_worker_cluster
from tests.monitoring.conftest import TOKEN

pytestmark = pytest.mark.django_db


def health(client):
    return client.get(
        "/healthz/workers", HTTP_AUTHORIZATION=f"Bearer {TOKEN}", HTTP_HOST="10.0.0.9"
    )


@pytest.fixture(autouse=True)
def token(settings):
    settings.CODEX_METRICS_TOKEN = TOKEN


def test_healthy_workers_with_their_jobs(client):
    cluster = make_worker_cluster("w1", beat_seconds_ago=2)
    make_task()
    job = OrmQ.objects.get()
    OrmQ.objects.filter(pk=job.pk).update(key=f"{job.key}@{cluster.claim}#77")
    response = health(client)
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ok" and body["blockers"] == []
    (worker,) = body["workers"]
    assert worker["host"] == "w1" and worker["cluster"] == cluster.claim
    assert 2 <= worker["seconds_since_beat"] < 30
    assert worker["jail"]["backend"] == "bubblewrap"
    assert worker["jail"]["problem"] == ""
    assert worker["model_key"] is True
    assert (worker["jobs_taken"], worker["jobs_running"]) == (0, 1)
    assert body["queue"] == {"waiting": 0, "oldest_age_seconds": 0.0}


def test_a_worker_without_a_jail_is_down_with_its_fix(client):
    make_worker_cluster(
        "w1",
        jail_problem="bubblewrap cannot create namespaces here",
        jail_fix="run the container with --security-opt systempaths=unconfined",
    )
    response = health(client)
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "down"
    (blocker,) = body["blockers"]
    assert blocker["code"] == "no_jail"
    assert "systempaths=unconfined" in blocker["fix"]


def test_no_worker_is_down(client):
    body = health(client).json()
    assert body["status"] == "down" and body["workers"] == []
    assert [blocker["code"] for blocker in body["blockers"]] == ["no_worker"]


def test_one_worker_of_two_without_a_jail_is_degraded(client):
    make_worker_cluster("w1")
    make_worker_cluster("w2", jail_problem="bubblewrap (bwrap) is not installed")
    response = health(client)
    assert response.status_code == 503
    assert response.json()["status"] == "degraded"
