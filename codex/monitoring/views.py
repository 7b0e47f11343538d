"""/metrics (Prometheus) and /healthz/workers (what each worker cluster
reports), for a scraper with the metrics token or a signed-in operator
(codex.monitoring.access). Both are answered before the host check when a
token is sent (codex.core.middleware.ProbeMiddleware): scrapers come by IP."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.http import require_safe
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from codex.monitoring.access import refusal
from codex.monitoring.metrics import CodexCollector
from codex.monitoring.workers import worker_health


@require_safe
def metrics(request: HttpRequest) -> HttpResponse:
    """The installation's figures in Prometheus' text format."""
    refused = refusal(request)
    if refused is not None:
        return refused
    # A registry per scrape, holding only the database-backed collector: no
    # figure lives in this process.
    registry = CollectorRegistry(auto_describe=False)
    registry.register(CodexCollector())
    return HttpResponse(generate_latest(registry), content_type=CONTENT_TYPE_LATEST)


@require_safe
def workers(request: HttpRequest) -> JsonResponse:
    """Each beating worker cluster: last beat, jail, model key, jobs; 200
    when nothing blocks every task, else 503 (a probe can alert on it)."""
    refused = refusal(request)
    if refused is not None:
        return refused
    health = worker_health()
    return JsonResponse(health, status=200 if health["status"] == "ok" else 503)
