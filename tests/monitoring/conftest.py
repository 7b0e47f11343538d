"""Scraping /metrics and /healthz/workers as Prometheus would: with the
metrics token, by IP."""

from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families

TOKEN = "metrics-token-for-the-tests-0123456789"


@pytest.fixture(autouse=True)
def no_history_snapshot():
    """Each test reads the history afresh (the cache outlives a test)."""
    from codex.monitoring.metrics import forget_history_snapshot

    forget_history_snapshot()
    yield
    forget_history_snapshot()


@pytest.fixture
def scrape(client, settings):
    """GET /metrics with the token; {(name, labels as a sorted tuple): value}."""
    settings.CODEX_METRICS_TOKEN = TOKEN

    def scrape() -> dict:
        response = client.get(
            "/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}", HTTP_HOST="10.0.0.9"
        )
        assert response.status_code == 200, response.content
        assert response["Content-Type"].startswith("text/plain; version=")
        figures = {}
        for family in text_string_to_metric_families(response.content.decode()):
            for sample in family.samples:
                figures[(sample.name, tuple(sorted(sample.labels.items())))] = (
                    sample.value
                )
        return figures

    return scrape
