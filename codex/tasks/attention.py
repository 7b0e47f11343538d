"""The console's Attention items over the apps (registered in codex.core.attention
when the tasks app is ready): held and stuck tasks, failing notifications,
configuration that weakens safety.

They read tasks, notifications and the jail, so they live here, above the core
that shows them.
"""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db.models import Count
from django.urls import reverse
from django.utils import timezone

from codex.core.attention import (
    ERROR,
    WARNING,
    AttentionItem,
    attention_provider,
)
from codex.fleet.readiness import ERROR as READINESS_ERROR
from codex.fleet.readiness import installation_blockers
from codex.notifications.models import Notification, NotificationStatus
from codex.tasks.models import Status, Task
from codex.tasks.recovery import stuck_tasks as stuck_query

# Where the console shows more of a blocker.
_blocker_links = {"no_worker": "/healthz/workers", "no_jail": "/healthz/workers"}


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _task_list(**filters: str) -> str:
    query = "&".join(f"{name}={value}" for name, value in filters.items())
    return f"{reverse('admin:tasks_task_changelist')}?{query}"


@attention_provider
def held_tasks() -> list[AttentionItem]:
    """Tasks blocked or waiting for a person."""
    counts = _count_by_status(Task, [Status.BLOCKED, Status.ESCALATED])
    items = []
    if counts.get(Status.ESCALATED):
        items.append(
            AttentionItem(
                f"{_plural(counts[Status.ESCALATED], 'task')} waiting for a person "
                "(escalated).",
                WARNING,
                _task_list(status__exact=Status.ESCALATED),
            )
        )
    if counts.get(Status.BLOCKED):
        items.append(
            AttentionItem(
                f"{_plural(counts[Status.BLOCKED], 'task')} blocked.",
                WARNING,
                _task_list(status__exact=Status.BLOCKED),
            )
        )
    return items


def _count_by_status(model, statuses) -> dict[str, int]:
    rows = (
        model.objects.filter(status__in=statuses)
        .order_by()
        .values("status")
        .annotate(n=Count("pk"))
    )
    return {row["status"]: row["n"] for row in rows}


@attention_provider
def stuck_tasks() -> list[AttentionItem]:
    """Tasks the system owes work on that stayed too long in one phase."""
    count = stuck_query(timezone.now()).count()
    if not count:
        return []
    return [
        AttentionItem(
            f"{_plural(count, 'task')} stuck: in one phase for more than "
            f"{settings.CODEX_STUCK_AFTER_MINUTES} minutes; the recovery job "
            "restarts them when their lease is free.",
            ERROR,
            reverse("admin:tasks_task_changelist") + "?o=-created_at",
        )
    ]


@attention_provider
def failing_notifications() -> list[AttentionItem]:
    """Notifications that failed, or were left sending by a worker that died."""
    counts = _count_by_status(Notification, [NotificationStatus.FAILED])
    url = reverse("admin:notifications_notification_changelist")
    items = []
    if counts.get(NotificationStatus.FAILED):
        items.append(
            AttentionItem(
                f"{_plural(counts[NotificationStatus.FAILED], 'notification')} "
                "failed to send.",
                ERROR,
                f"{url}?status__exact={NotificationStatus.FAILED}",
            )
        )
    stale = Notification.objects.filter(
        status=NotificationStatus.SENDING,
        # Past the job timeout the worker that claimed it is gone.
        claimed_at__lt=timezone.now() - timedelta(seconds=settings.Q_TIMEOUT),
    ).count()
    if stale:
        items.append(
            AttentionItem(
                f"{_plural(stale, 'notification')} left sending by a worker that "
                "stopped: whether it went out is unknown; mark it failed or retry.",
                WARNING,
                f"{url}?status__exact={NotificationStatus.SENDING}",
            )
        )
    return items


@attention_provider
def sandbox_and_keys() -> list[AttentionItem]:
    """What blocks every task (no worker, no jail on any worker, no model
    key: as the workers report it) and configuration that weakens what
    protects the machine or the secrets."""
    items = [
        AttentionItem(
            f"{blocker.topic}: {blocker.text}",
            ERROR if blocker.level == READINESS_ERROR else WARNING,
            _blocker_links.get(blocker.code, ""),
        )
        for blocker in installation_blockers()
    ]
    production = not (settings.DEBUG or getattr(settings, "TESTING", False))
    if production and not getattr(settings, "CODEX_FERNET_KEYS", None):
        items.append(
            AttentionItem(
                "CODEX_FERNET_KEYS is not set: secrets cannot be saved or read.",
                ERROR,
            )
        )
    return items
