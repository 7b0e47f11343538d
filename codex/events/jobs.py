"""Worker entry points of the event log: retention."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import models, router, transaction
from django.db.models import Q
from django.utils import timezone

from codex.events.models import Event
from codex.tasks.models import TERMINAL_STATUSES

# Rows per DELETE: short transactions, so writers appending events never wait
# long behind the pruning job.
PRUNE_BATCH_SIZE = 5000


def prunable_events(now=None) -> models.QuerySet[Event]:
    """Events past CODEX_EVENT_RETENTION_DAYS that no live task still needs:
    those of completed, failed or cancelled tasks, and those of no task.

    Empty when retention is 0 (keep forever, the default).
    """
    days = settings.CODEX_EVENT_RETENTION_DAYS
    if days <= 0:
        return Event.objects.none()
    cutoff = (now or timezone.now()) - timedelta(days=days)
    return Event.objects.filter(created_at__lt=cutoff).filter(
        Q(task__isnull=True) | Q(task__status__in=TERMINAL_STATUSES)
    )


def prune_old_events() -> int:
    """Scheduled job: delete the events `prunable_events()` selects; returns
    how many were deleted.

    The event log is append-only: EventQuerySet.delete() and Event.delete()
    raise AppendOnlyError, so no code path can drop history by accident.
    Retention is the one way events leave the log, and only here: the rows are
    removed with QuerySet._raw_delete, a single DELETE that bypasses the
    append-only guard (and signals, which nothing listens to; no table refers to
    events, so there is nothing to cascade). A task that is still running keeps
    its whole story, however old. Safe to run twice or concurrently: a row
    already gone is simply not deleted again.
    """
    total = 0
    using = router.db_for_write(Event)
    while True:
        ids = list(
            prunable_events()
            .order_by("created_at", "id")
            .values_list("pk", flat=True)[:PRUNE_BATCH_SIZE]
        )
        if not ids:
            return total
        with transaction.atomic(using=using):
            total += Event.objects.filter(pk__in=ids)._raw_delete(using)
