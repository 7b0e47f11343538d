"""Where an agent's run stood after its last complete turn
(docs/domain/fleet.md#run-checkpoints)."""

from __future__ import annotations

import json
import zlib
from datetime import timedelta
from decimal import Decimal
from typing import Any

from django.db import models
from django.utils import timezone

from codex.core.store import hot_row


class RunCheckpointQuerySet(models.QuerySet):
    @hot_row
    def of_role(self, task_id: int, role: str) -> RunCheckpointQuerySet:
        """The task's checkpoint of `role` (one at most), whichever attempt
        left it: read as each agent step starts."""
        return self.filter(task_id=task_id, role=role).order_by()[:1]


class RunCheckpoint(models.Model):
    """An agent run's conversation after its last complete turn, kept while
    the run works, so that the step retried after its worker died, or after
    a wait the model asked for, goes on instead of starting over.

    One per task and role; `attempt` names the phase entry and feedback
    cycles it belongs to (a later attempt never resumes an earlier one's
    conversation). The usage and cost fields hold what the run spent that no
    AgentRun has recorded yet (a dead worker records nothing): the resuming
    run counts them. `wait_until` is the end of a wait the model asked for;
    any worker honours it. Deleted when the run ends other than by a wait.
    """

    task = models.ForeignKey(
        "tasks.Task", on_delete=models.CASCADE, related_name="run_checkpoints"
    )
    role = models.CharField(max_length=40)
    attempt = models.CharField(max_length=200)
    conversation = models.BinaryField()
    turns = models.PositiveIntegerField(default=0)
    input_tokens = models.PositiveBigIntegerField(default=0)
    output_tokens = models.PositiveBigIntegerField(default=0)
    cache_write_tokens = models.PositiveBigIntegerField(default=0)
    cache_read_tokens = models.PositiveBigIntegerField(default=0)
    cost_usd = models.DecimalField(max_digits=12, decimal_places=6, default=Decimal(0))
    files_written = models.JSONField(default=list, blank=True)
    worktree_state = models.CharField(max_length=64, blank=True)
    wait_until = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(default=timezone.now)

    objects = RunCheckpointQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["task", "role"], name="run_checkpoint_one_per_role"
            )
        ]

    def __str__(self) -> str:
        return f"{self.task_id} {self.role} after {self.turns} turn(s)"

    def resumable(self, attempt: str, *, max_age_seconds: float) -> bool:
        """Whether a new run goes on from this checkpoint: saved in the same
        attempt at the phase (`attempt`), recently enough."""
        since = timezone.now() - timedelta(seconds=max_age_seconds)
        return self.attempt == attempt and self.updated_at >= since

    @staticmethod
    def pack(messages: list[dict[str, Any]]) -> bytes:
        return zlib.compress(json.dumps(messages, default=str).encode(), 1)

    @property
    def messages(self) -> list[dict[str, Any]]:
        return json.loads(zlib.decompress(bytes(self.conversation)))
