"""The append-only event log: what happened, to what, by whom, in order."""

from __future__ import annotations

from django.db import models
from django.utils import timezone


class EventKind(models.TextChoices):
    CREATED = "created", "Created"
    TRANSITION = "transition", "State transition"
    LEASE = "lease", "Lease"
    ESCALATION = "escalation", "Escalation"
    ERROR = "error", "Error"
    PHASE = "phase", "Phase step"
    CONTROL = "control", "Operator or user action"
    TOOL = "tool", "Agent tool call"
    WORKFLOW = "workflow", "Workflow event"
    WEBHOOK = "webhook", "Webhook received"
    CLAIM = "claim", "Issue claim"
    INSTANCE = "instance", "Agent instance"
    RUN = "run", "Agent run"


class AppendOnlyError(Exception):
    """Raised when code tries to change or delete a logged event."""


class EventQuerySet(models.QuerySet):
    def delete(self):  # noqa: D102 - see AppendOnlyError
        raise AppendOnlyError("The event log is append-only.")

    def update(self, **kwargs):  # noqa: D102
        raise AppendOnlyError("The event log is append-only.")

    def in_order(self) -> EventQuerySet:
        return self.order_by("created_at", "id")


class Event(models.Model):
    """One entry of the audit trail; never changed or deleted once written.

    A transition writes `field` (status or phase), `source` and `target`; every
    entry says who or what acted (`actor`: "user:alice", "worker:host:pid",
    "api:integrator") and why (`reason`). `data` holds kind-specific details.
    Reading a task's events by (created_at, id) tells its story in order.
    """

    created_at = models.DateTimeField(default=timezone.now, editable=False)
    task = models.ForeignKey(
        "tasks.Task",
        on_delete=models.PROTECT,
        related_name="events",
        null=True,
        blank=True,
    )
    subject = models.CharField(
        max_length=200,
        blank=True,
        help_text='What the event is about besides a task, e.g. "instance:work-12-a1".',
    )
    kind = models.CharField(max_length=20, choices=EventKind.choices)
    field = models.CharField(max_length=20, blank=True)
    source = models.CharField(max_length=40, blank=True)
    target = models.CharField(max_length=40, blank=True)
    actor = models.CharField(max_length=200)
    reason = models.TextField(blank=True)
    data = models.JSONField(default=dict, blank=True)

    objects = EventQuerySet.as_manager()

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [
            models.Index(fields=["task", "created_at", "id"], name="event_task_time"),
            models.Index(fields=["kind", "created_at"], name="event_kind_time"),
            models.Index(
                fields=["subject", "created_at"],
                name="event_subject_time",
                condition=~models.Q(subject=""),
            ),
        ]

    def __str__(self) -> str:
        if self.kind == EventKind.TRANSITION:
            return f"{self.field}: {self.source} → {self.target}"
        return f"{self.get_kind_display()}: {self.reason[:60]}"

    @classmethod
    def log(
        cls,
        kind: str,
        *,
        actor: str,
        reason: str = "",
        task=None,
        subject: str = "",
        **fields,
    ) -> Event:
        """Append one event now (inside the caller's transaction, if any)."""
        return cls.objects.create(
            kind=kind, actor=actor, reason=reason, task=task, subject=subject, **fields
        )

    def save(self, *args, **kwargs) -> None:
        if self.pk is not None and not self._state.adding:
            raise AppendOnlyError("The event log is append-only.")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise AppendOnlyError("The event log is append-only.")
