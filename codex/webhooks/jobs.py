"""Worker entry points for webhooks. Jobs take ids and re-read their rows.

`process_delivery` is safe to run twice (django-q2 delivers at least once): a
processed delivery is skipped, a delivery another worker is processing is
left to it, and each handler's effects are idempotent themselves (task
creation by idempotency key, comments through perform_once, transitions that
check the state first).
"""

from __future__ import annotations

import logging
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from codex.core.workers import enqueue_on_commit
from codex.webhooks.handlers import dispatch
from codex.webhooks.handlers.common import Result
from codex.webhooks.models import Outcome, WebhookDelivery

logger = logging.getLogger(__name__)

PROCESS_JOB = "codex.webhooks.jobs.process_delivery"
ERROR_MAX_LENGTH = 2000


def process_delivery(delivery_pk: int) -> str:
    """Act on one stored delivery and store what became of it. Never raises:
    a handler's error is stored on the delivery (outcome failed), because a
    raising job would be retried by the broker for a payload that will fail
    the same way. Returns the outcome."""
    if not WebhookDelivery.objects.take(delivery_pk):
        return "skipped: processed or being processed"
    delivery = WebhookDelivery.objects.get(pk=delivery_pk)
    try:
        result = dispatch(delivery)
        error = ""
    except Exception as exc:
        logger.exception("webhook delivery %s failed", delivery.delivery_id)
        result = Result(Outcome.FAILED, "processing raised an error")
        error = f"{type(exc).__name__}: {exc}"[:ERROR_MAX_LENGTH]
    done = result.outcome != Outcome.DEFERRED
    WebhookDelivery.objects.filter(pk=delivery_pk).update(
        outcome=result.outcome,
        detail=result.detail,
        error=error,
        processed_at=timezone.now() if done else None,
        processing_started_at=None,
    )
    return result.outcome


def reprocess(deliveries) -> int:
    """Process these deliveries again (the admin's action): their processed
    state is cleared and a job enqueued for each. Unprocessable ones are left
    as they are (they have no payload to act on). Returns how many."""
    pks = list(
        deliveries.exclude(outcome=Outcome.UNPROCESSABLE).values_list("pk", flat=True)
    )
    WebhookDelivery.objects.filter(pk__in=pks).update(
        processed_at=None,
        processing_started_at=None,
        outcome=Outcome.PENDING,
        detail="",
        error="",
    )
    for pk in pks:
        enqueue_on_commit(PROCESS_JOB, pk)
    return len(pks)


def process_deferred(max_age_hours: int = 24) -> int:
    """Scheduled: process the deliveries that no job will bring, for up to
    `max_age_hours` after they arrived: those deferred because their task was
    busy, and pending ones whose job was lost (`to_try_again`). Returns how
    many were tried."""
    since = timezone.now() - timedelta(hours=max_age_hours)
    pks = list(
        WebhookDelivery.objects.to_try_again(since=since).values_list("pk", flat=True)
    )
    for pk in pks:
        process_delivery(pk)
    return len(pks)


def prune_deliveries(days: int | None = None) -> int:
    """Scheduled: delete processed deliveries older than `days` (default
    CODEX_WEBHOOK_RETENTION_DAYS, else 30); payloads are large and what they
    caused is in the event log. Returns how many were deleted."""
    days = days or getattr(settings, "CODEX_WEBHOOK_RETENTION_DAYS", 30)
    cutoff = timezone.now() - timedelta(days=days)
    deleted, _ = WebhookDelivery.objects.filter(
        processed_at__isnull=False, received_at__lt=cutoff
    ).delete()
    return deleted
