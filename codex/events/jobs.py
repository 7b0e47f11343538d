"""Worker entry points of the event log: retention."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import timedelta

from django.conf import settings
from django.db import models, router, transaction
from django.db.models import Q
from django.utils import timezone

from codex.events.models import Event

# Rows per DELETE: short transactions, so writers appending events never wait
# long behind the pruning job.
PRUNE_BATCH_SIZE = 5000

# The statuses of a finished task, whose old events may go: given by the tasks
# app from its ready(), so that the event log imports no app above it
# (docs/architecture.md#layer-debts). Until they are given, only the events of
# no task are pruned.
_FINISHED_TASK_STATUSES: set[str] = set()


def register_finished_task_statuses(statuses: Iterable[str]) -> None:
    """Have the pruning treat a task in one of `statuses` as finished (its
    events may go once past retention)."""
    _FINISHED_TASK_STATUSES.update(statuses)


def prunable_events(now=None) -> models.QuerySet[Event]:
    """Events past CODEX_EVENT_RETENTION_DAYS that no live task still needs:
    those of finished tasks (completed, failed or cancelled: the statuses
    the tasks app registers) and those of no task.

    Empty when retention is 0 (keep forever, the default).
    """
    days = settings.CODEX_EVENT_RETENTION_DAYS
    if days <= 0:
        return Event.objects.none()
    cutoff = (now or timezone.now()) - timedelta(days=days)
    return Event.objects.filter(created_at__lt=cutoff).filter(
        Q(task__isnull=True) | Q(task__status__in=sorted(_FINISHED_TASK_STATUSES))
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
