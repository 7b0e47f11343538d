"""The output of an agent's command while it runs (docs/domain/fleet.md#live-output)."""

from __future__ import annotations

from django.db import models
from django.utils import timezone

TAIL_CHARS = 16_000


class LiveOutput(models.Model):
    """The end of the output of the command an agent is running on a task,
    as it comes: one row per task, written every few seconds by the worker
    while a long command (a build, a test suite) runs, and shown on the
    task's live page. Kept after the command ends until the next one."""

    task = models.OneToOneField(
        "tasks.Task", on_delete=models.CASCADE, related_name="live_output"
    )
    role = models.CharField(max_length=40)
    text = models.TextField(blank=True)
    started_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"{self.task_id} {self.role}: {len(self.text)} characters"
