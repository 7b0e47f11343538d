"""A scrape of /metrics costs the same statements whatever the database
holds: one aggregate per family, none per task, run, worker or delivery; and
within a minute of the last, the history (finished tasks, runs, escalations,
deliveries) comes from a snapshot, the work in progress still live."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from codex.monitoring.metrics import forget_history_snapshot
from codex.webhooks.models import WebhookDelivery
from tests.factories import make_task, make_worker_cluster, put_in_state
from tests.fleet.factories import make_instance, make_run
from tests.monitoring.conftest import TOKEN

pytestmark = pytest.mark.django_db


def statements(client, *, fresh: bool = True) -> int:
    if fresh:
        forget_history_snapshot()
    with CaptureQueriesContext(connection) as queries:
        response = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
        assert response.status_code == 200
    return len(queries)


def add_a_lot(round_: int) -> None:
    instance = make_instance(role="developer", issue_number=100 + round_)
    for number in range(5):
        task = make_task()
        put_in_state(task, status="blocked", phase="planning")
        make_run(instance=instance, cost_usd=Decimal("0.5"), task=task)
        WebhookDelivery.objects.create(
            delivery_id=f"r{round_}-{number}", event="issues", outcome="processed"
        )
    make_worker_cluster(f"w{round_}", model_key=False)


def test_a_scrape_costs_the_same_with_ten_times_the_rows(client, settings):
    settings.CODEX_METRICS_TOKEN = TOKEN
    settings.CODEX_PHASE_RUNNER = "agents.phase_runner.AgentPhaseRunner"
    add_a_lot(0)
    few = statements(client)
    for round_ in range(1, 10):
        add_a_lot(round_)
    assert statements(client) == few
    # tasks in flight and finished; runs; durations; the job queue (waiting,
    # its oldest, the claimed); the beating clusters; the console's saved
    # model key; jail escalations; webhook deliveries.
    assert few <= 11


def test_a_scrape_within_the_minute_reads_no_history(client, settings):
    settings.CODEX_METRICS_TOKEN = TOKEN
    settings.CODEX_PHASE_RUNNER = "agents.phase_runner.AgentPhaseRunner"
    add_a_lot(0)
    first = statements(client)
    # finished tasks, runs, durations, jail escalations, webhook deliveries
    assert statements(client, fresh=False) == first - 5
