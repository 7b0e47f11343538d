"""What GitHub sent us: every delivery, kept with what processing made of it."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.db import IntegrityError, models, transaction
from django.db.models import Q
from django.utils import timezone

# How long a worker may hold a delivery before another worker may take it over
# (a worker killed mid-delivery must not block it forever).
PROCESSING_TIMEOUT = timedelta(minutes=5)


class Outcome(models.TextChoices):
    """What became of a delivery."""

    PENDING = "pending", "Pending"
    PROCESSED = "processed", "Processed"
    IGNORED = "ignored", "Ignored"
    UNKNOWN_REPOSITORY = "unknown repository", "Unknown repository"
    DEFERRED = "deferred", "Deferred (task busy)"
    FAILED = "failed", "Failed"
    # Signed, but its payload cannot be read or held in the JSON column (not
    # a JSON object, or text the database refuses): kept as raw bytes only.
    UNPROCESSABLE = "unprocessable", "Unprocessable (kept raw)"


def scrub(value: Any) -> Any:
    """`value` with NUL characters replaced: PostgreSQL's jsonb and text cannot
    hold U+0000, and one crafted payload must not turn into a 500."""
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd")
    if isinstance(value, list):
        return [scrub(item) for item in value]
    if isinstance(value, dict):
        return {scrub(key): scrub(item) for key, item in value.items()}
    return value


class WebhookDeliveryQuerySet(models.QuerySet):
    """Deliveries; `receive` stores a new one, `take` is how a worker gets one
    to itself, `to_try_again` finds those no job will bring."""

    def receive(self, **fields: Any) -> WebhookDelivery | None:
        """Store a new delivery and return it, or None when its delivery_id is
        already stored (a redelivery, or the same delivery arriving twice at
        once: on PostgreSQL the second INSERT waits for the first to commit).

        The unique delivery_id is the dedupe: the INSERT is tried first rather
        than after a SELECT, so a new delivery costs one statement. Outside a
        transaction it commits by itself (durable when this returns, no
        BEGIN/COMMIT round trips); inside one, a savepoint keeps a conflict from
        breaking the caller's transaction.
        """
        try:
            if transaction.get_connection(self.db).in_atomic_block:
                with transaction.atomic(using=self.db):
                    return self.create(**fields)
            return self.create(**fields)
        except IntegrityError:
            return None

    def take(self, pk: int, now=None) -> bool:
        """Mark delivery `pk` as being processed now, unless it is processed or
        another worker took it less than PROCESSING_TIMEOUT ago. One conditional
        UPDATE, so two workers never process the same delivery at once."""
        now = now or timezone.now()
        return bool(
            self.filter(pk=pk, processed_at__isnull=True)
            .filter(
                Q(processing_started_at__isnull=True)
                | Q(processing_started_at__lt=now - PROCESSING_TIMEOUT)
            )
            .update(processing_started_at=now, attempts=models.F("attempts") + 1)
        )

    def to_try_again(self, *, since, now=None) -> WebhookDeliveryQuerySet:
        """The deliveries received after `since` and not processed that no job
        will bring, oldest first:

        - deferred ones (their task's lease was busy);
        - pending ones whose job was lost: not taken within PROCESSING_TIMEOUT
          of arriving (the Redis broker loses its queued jobs when it
          restarts), or taken by a worker that died (PROCESSING_TIMEOUT ago
          and never finished). A job still queued for one finds it processed
          and does nothing (`take`).
        """
        now = now or timezone.now()
        stale = now - PROCESSING_TIMEOUT
        lost = Q(outcome=Outcome.PENDING, received_at__lt=stale) & (
            Q(processing_started_at__isnull=True) | Q(processing_started_at__lt=stale)
        )
        return (
            self.filter(received_at__gte=since, processed_at__isnull=True)
            .filter(Q(outcome=Outcome.DEFERRED) | lost)
            .order_by("received_at", "pk")
        )


class WebhookDelivery(models.Model):
    """One GitHub webhook delivery (X-GitHub-Delivery), stored before it is acted
    on, so that the 10-second answer GitHub waits for never depends on the work.

    `body` is the raw body exactly as signed (bytes: whatever GitHub sent can
    be stored, and its signature checked again); `payload` is that body parsed,
    with NUL characters replaced (PostgreSQL's jsonb cannot hold U+0000), or
    {} for an unprocessable delivery, whose `error` says why it could not be
    read. `outcome` says what processing made of it; `detail` what was done
    (the task created, the command applied), `error` why processing failed. A
    delivery is processed at most once (`processed_at`); a deferred one (its
    task's lease was busy) stays unprocessed and is picked up again by
    `process_deferred` or the admin's re-process action. GitHub sends the same
    delivery id on redelivery, so the unique id makes a redelivery a no-op.
    """

    delivery_id = models.CharField(max_length=100, unique=True)
    event = models.CharField(max_length=60)
    action = models.CharField(max_length=60, blank=True)
    payload = models.JSONField(default=dict)
    body = models.BinaryField(
        default=b"", editable=False, help_text="The raw body, as signed."
    )
    repository = models.ForeignKey(
        "repositories.Repository",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="webhook_deliveries",
        help_text="The known repository the delivery is about, once resolved.",
    )
    received_at = models.DateTimeField(default=timezone.now, editable=False)
    processing_started_at = models.DateTimeField(null=True, blank=True)
    processed_at = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    outcome = models.CharField(
        max_length=30, choices=Outcome.choices, default=Outcome.PENDING
    )
    detail = models.TextField(blank=True)
    error = models.TextField(blank=True)

    objects = WebhookDeliveryQuerySet.as_manager()

    class Meta:
        ordering = ["-received_at", "-id"]
        verbose_name_plural = "webhook deliveries"
        indexes = [
            models.Index(fields=["-received_at", "-id"], name="webhook_received"),
            models.Index(fields=["outcome", "received_at"], name="webhook_outcome"),
        ]

    def __str__(self) -> str:
        event = f"{self.event}.{self.action}" if self.action else self.event
        return f"{event} {self.delivery_id}"

    @property
    def sender_login(self) -> str:
        """Who caused the event on GitHub ("" when the payload does not say)."""
        sender = self.payload.get("sender") or {}
        return str(sender.get("login") or "") if isinstance(sender, dict) else ""
