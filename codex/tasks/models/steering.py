"""Steering: a person's message to the agents working on a task (docs/gates.md).

A message is stored when it is sent (task page, API, or an `@codex` comment
by someone with write access) and handed to the agent before its next run,
fenced as human input, in the order the messages were sent; the run that
received it is recorded on the message, and the timeline shows it with its
author.
"""

from __future__ import annotations

import re

from django.conf import settings
from django.db import models
from django.utils import timezone

from codex.core.store import hot_rows

MESSAGE_MAX_LENGTH = 4000


class SteeringSource(models.TextChoices):
    PAGE = "page", "Task page"
    API = "api", "API"
    FORGE = "forge", "Comment on the issue or pull request"


class SteeringQuerySet(models.QuerySet):
    def undelivered(self) -> SteeringQuerySet:
        return self.filter(delivered_at__isnull=True).order_by("created_at", "id")

    @hot_rows
    def undelivered_to(self, task_id: int) -> SteeringQuerySet:
        """The task's messages not handed to an agent yet, oldest first (read
        before a run's every turn)."""
        return self.filter(task_id=task_id).undelivered()


class SteeringMessage(models.Model):
    """One message from a person to the task's agents."""

    task = models.ForeignKey(
        "tasks.Task", on_delete=models.CASCADE, related_name="steering_messages"
    )
    author = models.CharField(max_length=200)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
    )
    source = models.CharField(max_length=10, choices=SteeringSource.choices)
    body = models.TextField()
    created_at = models.DateTimeField(default=timezone.now)
    delivered_at = models.DateTimeField(null=True, blank=True)
    delivered_phase = models.CharField(max_length=20, blank=True)

    objects = SteeringQuerySet.as_manager()

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [
            models.Index(fields=["task", "delivered_at"], name="steering_pending")
        ]

    def __str__(self) -> str:
        return f"message from {self.author} to {self.task_id}"


def clean_message(text: str) -> str:
    """The message as stored: no NULs (PostgreSQL refuses them), no
    surrounding blank space, capped at MESSAGE_MAX_LENGTH."""
    text = re.sub(r"\x00", "", text or "").strip()
    return text[:MESSAGE_MAX_LENGTH]


def send_message(
    task, body: str, *, author: str, source: str, user=None
) -> SteeringMessage:
    """Store a person's message for the task's agents and log it with its
    author; ValueError when it is empty or the task has ended."""
    from codex.events.models import Event, EventKind

    text = clean_message(body)
    if not text:
        raise ValueError("the message is empty")
    if task.is_terminal:
        raise ValueError(
            f"{task.task_id} is {task.get_status_display().lower()}: "
            "no agent will read the message"
        )
    message = SteeringMessage.objects.create(
        task=task, author=author, user=user, source=source, body=text
    )
    Event.log(
        EventKind.CONTROL,
        actor=author,
        reason=f"message to the agents: {text[:300]}",
        task=task,
        data={"steering": message.pk, "source": source},
    )
    return message
