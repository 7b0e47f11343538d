"""A child agent's status report (docs/domain/fan-out.md#child-reports)."""

from __future__ import annotations

from datetime import datetime

from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models
from django.utils import timezone

from codex.children.choices import StatusType
from codex.children.parsing import (
    CHILD_ID_MAX_LENGTH,
    CHILD_ID_PATTERN,
    MAX_PR_NUMBER,
    ChildReportData,
    is_critical,
)


class ChildReportQuerySet(models.QuerySet):
    def current(self) -> ChildReportQuerySet:
        """The latest report of each child: only it counts."""
        return self.filter(is_current=True)

    def record(
        self,
        fan_out,
        data: ChildReportData,
        *,
        comment_id: int,
        body: str,
        author: str,
        reported_at: datetime,
        child_task=None,
    ) -> tuple[ChildReport, bool]:
        """Store one marked comment; returns (report, created).

        The same comment delivered again returns the stored report unchanged. A
        child's report is current when it is the latest by (reported_at,
        comment_id); the one it replaces is kept, marked superseded, so a late,
        out-of-order delivery of an older comment never wins. Call with the
        fan-out's row locked (FanOut.receive_comment does).
        """
        existing = self.filter(fan_out=fan_out, comment_id=comment_id).first()
        if existing is not None:
            return existing, False
        current = self.filter(
            fan_out=fan_out, child_id=data.child_id, is_current=True
        ).first()
        newest = current is None or (reported_at, comment_id) > (
            current.reported_at,
            current.comment_id,
        )
        if current is not None and newest:
            # Before the insert: the one-current-per-child constraint is immediate.
            current.is_current = False
            current.save(update_fields=["is_current"])
        report = self.model(
            fan_out=fan_out,
            child_id=data.child_id,
            status_type=data.status_type,
            pr_number=data.pr_number,
            failure_reason=data.failure_reason,
            body=body,
            comment_id=comment_id,
            author=author,
            reported_at=reported_at,
            child_task=child_task,
            is_current=newest,
        )
        report.full_clean(exclude=["fan_out", "child_task"])
        report.save()
        report.superseded = current if newest else None
        return report, True


class ChildReport(models.Model):
    """One child agent's completion status, read from a "🤖 Child" comment.

    Rules (docs/domain/fan-out.md#child-reports): `child_id` matches `C\\d+`;
    `status_type` is SUCCESS, FAILURE, PARTIAL or AMBIGUOUS as
    `parse_child_report` detected it; a SUCCESS
    should carry its pull request and a FAILURE its reason. One comment is one
    report (unique `comment_id` per fan-out). A child that reports again
    replaces its earlier report: every report is kept, and exactly one per child
    is `is_current`, the latest by (reported_at, comment_id).
    """

    fan_out = models.ForeignKey(
        "children.FanOut", on_delete=models.CASCADE, related_name="reports"
    )
    child_id = models.CharField(
        max_length=CHILD_ID_MAX_LENGTH,
        validators=[RegexValidator(CHILD_ID_PATTERN, "Not a child id (C1, C2, ...).")],
    )
    status_type = models.CharField(max_length=10, choices=StatusType.choices)
    pr_number = models.PositiveIntegerField(
        null=True,
        blank=True,
        validators=[MinValueValidator(1), MaxValueValidator(MAX_PR_NUMBER)],
    )
    failure_reason = models.TextField(blank=True)
    body = models.TextField(help_text="The comment as posted.")
    comment_id = models.BigIntegerField(validators=[MinValueValidator(1)])
    author = models.CharField(max_length=100, blank=True)
    reported_at = models.DateTimeField(help_text="When the comment was posted.")
    received_at = models.DateTimeField(default=timezone.now, editable=False)
    child_task = models.ForeignKey(
        "tasks.Task",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="child_reports",
    )
    is_current = models.BooleanField(
        default=True, help_text="The child's latest report; earlier ones are kept."
    )

    objects = ChildReportQuerySet.as_manager()

    class Meta:
        ordering = ["-reported_at", "-comment_id"]
        constraints = [
            models.UniqueConstraint(
                fields=["fan_out", "comment_id"], name="children_report_one_per_comment"
            ),
            models.UniqueConstraint(
                fields=["fan_out", "child_id"],
                condition=models.Q(is_current=True),
                name="children_report_one_current_per_child",
            ),
            models.CheckConstraint(
                condition=models.Q(comment_id__gt=0),
                name="children_report_comment_id_positive",
            ),
            models.CheckConstraint(
                condition=models.Q(pr_number__isnull=True) | models.Q(pr_number__gt=0),
                name="children_report_pr_number_positive",
            ),
            models.CheckConstraint(
                condition=models.Q(status_type__in=StatusType.values),
                name="children_report_status_type_valid",
            ),
        ]
        indexes = [
            models.Index(
                fields=["fan_out", "is_current", "child_id"],
                name="children_report_current",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.child_id}: {self.status_type}"

    @property
    def critical(self) -> bool:
        """Whether this is a failure the child called critical (see `decide`)."""
        return is_critical(self.body, self.status_type)
