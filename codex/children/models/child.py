"""A child of a fan-out: one child request, run as a task of its own."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.core.validators import RegexValidator
from django.db import models
from django.utils import timezone

from codex.children.choices import FanOutState
from codex.children.parsing import CHILD_ID_MAX_LENGTH, CHILD_ID_PATTERN


def child_timeout() -> timedelta:
    """How long a child may work without reporting (configuration
    children.child_timeout_minutes, 8 by default), read when it applies."""
    from codex.configuration.config import get_config

    return timedelta(minutes=get_config("children.child_timeout_minutes"))


class ChildQuerySet(models.QuerySet):
    def overdue(self, now: datetime, timeout: timedelta) -> ChildQuerySet:
        """Children of fan-outs still waiting for reports, spawned more than
        `timeout` ago, whose task is still at work and who have not reported
        (docs/children.md: the per-child timeout)."""
        from codex.children.models.report import ChildReport

        reported = ChildReport.objects.current().filter(
            fan_out=models.OuterRef("fan_out"), child_id=models.OuterRef("child_id")
        )
        return (
            self.filter(
                fan_out__state__in=(
                    FanOutState.CHILDREN_SPAWNED,
                    FanOutState.AWAITING_COMPLETIONS,
                ),
                created_at__lte=now - timeout,
            )
            .exclude(task__status__in=("completed", "failed", "cancelled"))
            .exclude(models.Exists(reported))
        )


class Child(models.Model):
    """Child `child_id` (C1 … C5) of a fan-out and the task that does its work.

    The task runs like any other (its own worktree, branch, coding instance and
    pull request) and reports to the parent's issue with the "🤖 Child" comment
    protocol; its pull request is merged by the parent's completion analysis,
    never by the child itself (docs/children.md).
    """

    fan_out = models.ForeignKey(
        "children.FanOut", on_delete=models.CASCADE, related_name="children"
    )
    child_id = models.CharField(
        max_length=CHILD_ID_MAX_LENGTH,
        validators=[RegexValidator(CHILD_ID_PATTERN, "Not a child id (C1, C2, ...).")],
    )
    task = models.OneToOneField(
        "tasks.Task", on_delete=models.PROTECT, related_name="as_child"
    )
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    objects = ChildQuerySet.as_manager()

    class Meta:
        ordering = ["fan_out", "child_id"]
        constraints = [
            models.UniqueConstraint(
                fields=["fan_out", "child_id"], name="children_child_one_per_id"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.child_id} of {self.fan_out}"
