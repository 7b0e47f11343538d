"""The notification outbox (docs/domain/notifications.md#notification-outbox):
deduplicated, sent at most once.

A notification is not idempotent on the receiving side, so each one carries a
`notification_id` and is tracked as a side effect
(docs/domain/concurrency.md#side-effects): queuing the same id twice sends once.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from django.db import IntegrityError, models, transaction
from django.db.models import F
from django.utils import timezone
from django_fsm import ConcurrentTransitionMixin, FSMField, FSMModelMixin, transition

from codex.core.backoff import backoff_seconds
from codex.core.errors import ClassifiedFailure
from codex.events.models import Event, EventKind
from integrations.notify.senders import OutgoingMessage

# Five tries, one minute doubling up to an hour between them
# (docs/domain/notifications.md#notification-outbox).
BACKOFF_BASE_SECONDS = 60
BACKOFF_CAP_SECONDS = 3600
ERROR_KEPT_CHARS = 2000


class NotificationStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    SENDING = "sending", "Sending"
    SENT = "sent", "Sent"
    FAILED = "failed", "Failed"


def max_attempts() -> int:
    """Configuration notify.max_attempts (database, CODEX_NOTIFY_MAX_ATTEMPTS,
    5)."""
    from codex.configuration.config import get_config

    return get_config("notify.max_attempts")


def backoff(attempts: int) -> timedelta:
    """Wait after the `attempts`-th failure: 1, 2, 4, ... minutes, at most 1 hour."""
    return timedelta(
        seconds=backoff_seconds(
            attempts - 1,
            base=BACKOFF_BASE_SECONDS,
            cap=BACKOFF_CAP_SECONDS,
            jitter=False,
        )
    )


class NotificationQuerySet(models.QuerySet):
    def enqueue(
        self,
        notification_id: str,
        *,
        channel: str,
        recipient: str,
        subject: str = "",
        body: str = "",
        task=None,
    ) -> tuple[Notification, bool]:
        """Queue a notification once per `notification_id`; returns (row, created).

        The same id returns the row queued first, unchanged, even when two callers
        race: the unique constraint decides, and the loser reads the winner's row.
        """
        existing = self.filter(notification_id=notification_id).first()
        if existing is not None:
            return existing, False
        try:
            with transaction.atomic():
                return (
                    self.create(
                        notification_id=notification_id,
                        channel=channel,
                        recipient=recipient,
                        subject=subject,
                        body=body,
                        task=task,
                    ),
                    True,
                )
        except IntegrityError:
            return self.get(notification_id=notification_id), False

    def due(self, now: datetime | None = None) -> NotificationQuerySet:
        """Pending notifications whose next attempt time has come, oldest first."""
        return self.filter(
            status=NotificationStatus.PENDING,
            next_attempt_at__lte=now or timezone.now(),
        ).order_by("next_attempt_at", "id")


class Notification(ConcurrentTransitionMixin, FSMModelMixin, models.Model):
    """One message to a person, queued in the outbox and delivered by a worker.

    Status::

        pending ──(claimed by one worker)──▶ sending ──mark_sent──▶ sent
           ▲                                    │
           └──────── schedule_retry ◀───────────┤ (attempts left, backoff)
                                                └──mark_failed──▶ failed
        failed ──retry (operator)──▶ pending

    A worker claims a row with one conditional UPDATE (pending → sending), so
    only one worker ever sends it. A worker that dies after claiming leaves the
    row in `sending`: whether the message went out is unknown, so it is not
    sent again automatically; an operator looks and marks it failed or retries.
    """

    notification_id = models.CharField(max_length=200, unique=True)
    task = models.ForeignKey(
        "tasks.Task",
        on_delete=models.PROTECT,
        related_name="notifications",
        null=True,
        blank=True,
    )
    channel = models.CharField(
        max_length=50, help_text='Where it goes, e.g. "teams", "email", "github".'
    )
    recipient = models.CharField(max_length=300)
    subject = models.CharField(max_length=300, blank=True)
    body = models.TextField(blank=True)
    # Not protected=True: django-fsm's refresh_from_db switches that flag off and
    # on for the whole class, which races between threads (see the xfail in
    # tests/core/store/test_leases.py). editable=False keeps it out of every form;
    # changes go through the claim UPDATE and the transitions below.
    status = FSMField(
        max_length=10,
        choices=NotificationStatus.choices,
        default=NotificationStatus.PENDING,
        editable=False,
    )
    attempts = models.PositiveSmallIntegerField(default=0, editable=False)
    next_attempt_at = models.DateTimeField(default=timezone.now)
    last_error = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    claimed_at = models.DateTimeField(null=True, blank=True, editable=False)
    sent_at = models.DateTimeField(null=True, blank=True, editable=False)

    objects = NotificationQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["status", "next_attempt_at"], name="notify_due"),
            models.Index(fields=["-created_at", "-id"], name="notify_created"),
        ]

    def __str__(self) -> str:
        return self.notification_id

    # -- delivery ----------------------------------------------------------------

    def claim(self) -> bool:
        """Take the row for sending (pending and due → sending) in one UPDATE.

        True only for the one caller whose UPDATE matched.
        """
        now = timezone.now()
        with transaction.atomic():
            claimed = Notification.objects.filter(
                pk=self.pk,
                status=NotificationStatus.PENDING,
                next_attempt_at__lte=now,
            ).update(
                status=NotificationStatus.SENDING,
                attempts=F("attempts") + 1,
                claimed_at=now,
            )
            self.refresh_from_db()
            if claimed:
                self._log("pending", "sending", "claimed for delivery")
        return bool(claimed)

    def outgoing_message(self) -> OutgoingMessage:
        """What a sender delivers: this notification's fields as plain data."""
        return OutgoingMessage(
            notification_id=self.notification_id,
            channel=self.channel,
            recipient=self.recipient,
            subject=self.subject,
            body=self.body,
            task_id=self.task.task_id if self.task is not None else None,
            created_at=self.created_at,
        )

    def deliver(self, sender: Callable[[OutgoingMessage], Any]) -> bool:
        """Send with `sender(message)` (`outgoing_message()`) unless someone
        claimed it already.

        Returns True when this call sent it. A sender that raises schedules a
        retry with backoff (or the server's retry_after from a ClassifiedFailure)
        until CODEX_NOTIFY_MAX_ATTEMPTS; a ClassifiedFailure whose action is
        manual_review or abort fails the notification at once.
        """
        if not self.claim():
            return False
        try:
            sender(self.outgoing_message())
        except Exception as exc:  # noqa: BLE001 - any failure is recorded
            with transaction.atomic():
                if self._should_retry(exc):
                    self.schedule_retry(exc)
                else:
                    self.mark_failed(exc)
                self.save()
            return False
        with transaction.atomic():
            self.mark_sent()
            self.save()
        return True

    def _should_retry(self, exc: Exception) -> bool:
        if isinstance(exc, ClassifiedFailure) and not exc.error.recoverable:
            return False
        return self.attempts < max_attempts()

    def _delay(self, exc: Exception) -> timedelta:
        delay = backoff(self.attempts)
        if isinstance(exc, ClassifiedFailure) and exc.error.retry_after:
            # Waiting less than the server asked would only be refused again.
            delay = max(delay, timedelta(seconds=exc.error.retry_after))
        return delay

    # -- transitions -------------------------------------------------------------

    @transition(
        field=status,
        source=NotificationStatus.SENDING,
        target="sent",
        custom={"admin": False},
    )
    def mark_sent(self) -> None:
        """The sender accepted the message."""
        self.sent_at = timezone.now()
        self.last_error = ""
        self._log("sending", "sent", "delivered")

    @transition(
        field=status,
        source=NotificationStatus.SENDING,
        target="pending",
        custom={"admin": False},
    )
    def schedule_retry(self, exc: Exception) -> None:
        """The send failed; try again after the backoff."""
        self.last_error = _describe(exc)
        self.next_attempt_at = timezone.now() + self._delay(exc)
        self._log("sending", "pending", f"attempt {self.attempts} failed; will retry")

    @transition(
        field=status,
        source=NotificationStatus.SENDING,
        target="failed",
        custom={"label": "Mark failed"},
    )
    def mark_failed(self, exc: Exception | None = None, *, by: str = "") -> None:
        """No more tries: attempts exhausted, a non-recoverable error, or an
        operator deciding about a row left in `sending` by a dead worker."""
        if exc is not None:
            self.last_error = _describe(exc)
        self._log("sending", "failed", "gave up", actor=by)

    @transition(
        field=status,
        source=NotificationStatus.FAILED,
        target="pending",
        custom={"label": "Retry"},
    )
    def retry(self, *, by: str = "") -> None:
        """Operator: try a failed notification again now."""
        self.next_attempt_at = timezone.now()
        self._log("failed", "pending", "retried by an operator", actor=by)

    def _log(self, source: str, target: str, reason: str, actor: str = "") -> None:
        Event.log(
            EventKind.TRANSITION,
            actor=actor or "notifications:outbox",
            reason=reason,
            task=self.task,
            subject=f"notification:{self.notification_id}"[:200],
            field="status",
            source=source,
            target=target,
            data={"attempts": self.attempts, "channel": self.channel},
        )


def _describe(exc: Exception) -> str:
    return f"{type(exc).__name__}: {exc}"[:ERROR_KEPT_CHARS]
