"""Pause and cancel requests that wait for the current step to end."""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from codex.core.store import hot_rows


class ControlAction(models.TextChoices):
    PAUSE = "pause", "Pause"
    CANCEL = "cancel", "Cancel"


class ControlRequestQuerySet(models.QuerySet):
    def pending(self) -> ControlRequestQuerySet:
        return self.filter(applied_at__isnull=True).order_by("created_at", "id")

    @hot_rows
    def pending_of(self, task_id: int) -> ControlRequestQuerySet:
        """The task's requests not applied yet, oldest first (every step asks
        twice: before it starts and when it ends)."""
        return self.filter(task_id=task_id).pending()


class ControlRequest(models.Model):
    """A person asked to pause or cancel a task while a worker was in a step.

    The worker holds the task's lease for the whole step, so the request is kept
    here and applied at the next step boundary (docs/architecture.md#step-flow):
    after the step's result is recorded, or before the next step starts.
    `outcome` says what happened
    (applied, or why not: the task had meanwhile completed, say).
    """

    task = models.ForeignKey(
        "tasks.Task", on_delete=models.CASCADE, related_name="control_requests"
    )
    action = models.CharField(max_length=10, choices=ControlAction.choices)
    requested_by = models.CharField(max_length=200)
    reason = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    applied_at = models.DateTimeField(null=True, blank=True)
    outcome = models.CharField(max_length=200, blank=True)

    objects = ControlRequestQuerySet.as_manager()

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["task", "action"],
                condition=models.Q(applied_at__isnull=True),
                name="control_request_one_pending_per_action",
            )
        ]

    def __str__(self) -> str:
        return f"{self.action} {self.task_id} ({self.outcome or 'pending'})"
