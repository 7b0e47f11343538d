"""Verification and review reports, one per cycle
(docs/domain/tasks.md#verification-report, #review-report)."""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from codex.core.store import hot_row


class Recommendation(models.TextChoices):
    APPROVE = "approve", "Approve"
    REQUEST_CHANGES = "request_changes", "Request changes"


class VerificationReport(models.Model):
    """QA's verdict on one cycle (docs/domain/tasks.md#verification-report).

    Exported as agent-verification/{task}/report-{n}.yml.

    `failures`: [{name, error, file, line}]; `acceptance_criteria`: [{criterion,
    status (passed|failed|blocked), evidence, issue_ref}]; `feedback`: {priority,
    summary, items: [{severity, description, file, line, suggestion}]}.
    """

    task = models.ForeignKey(
        "tasks.Task", on_delete=models.CASCADE, related_name="verification_reports"
    )
    cycle = models.PositiveSmallIntegerField()
    pr_url = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    tests_passed = models.PositiveIntegerField(default=0)
    tests_failed = models.PositiveIntegerField(default=0)
    tests_skipped = models.PositiveIntegerField(default=0)
    tests_total = models.PositiveIntegerField(default=0)
    failures = models.JSONField(default=list, blank=True)
    acceptance_criteria = models.JSONField(default=list, blank=True)
    recommendation = models.CharField(max_length=20, choices=Recommendation.choices)
    feedback = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["task", "cycle"]
        constraints = [
            models.UniqueConstraint(
                fields=["task", "cycle"], name="verification_report_per_cycle"
            ),
            models.CheckConstraint(
                condition=models.Q(cycle__gte=1), name="verification_cycle_from_1"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.task.task_id} verification report-{self.cycle}"

    @property
    def path(self) -> str:
        return f"agent-verification/{self.task.task_id}/report-{self.cycle}.yml"


class ReviewReportQuerySet(models.QuerySet):
    @hot_row
    def newest_of(self, task_id: int) -> ReviewReportQuerySet:
        """The task's newest review report (read by the guards of every step
        after a review)."""
        return self.filter(task_id=task_id).order_by("-cycle")[:1]


class ReviewReport(models.Model):
    """The reviewer's verdict on one cycle (docs/domain/tasks.md#review-report).

    Exported as agent-review/{task}/report-{n}.yml.

    `comments`: [{id, severity (blocking|suggestion), file, line, issue,
    suggestion, category}]; `security`: {vulnerabilities_found, items: [{type,
    description, severity, file, line}]}; `feedback`: {blocking_count,
    suggestion_count, priority_order, message}.
    """

    task = models.ForeignKey(
        "tasks.Task", on_delete=models.CASCADE, related_name="review_reports"
    )
    cycle = models.PositiveSmallIntegerField()
    pr_url = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    assessment = models.CharField(max_length=20, choices=Recommendation.choices)
    comments = models.JSONField(default=list, blank=True)
    security = models.JSONField(default=dict, blank=True)
    feedback = models.JSONField(default=dict, blank=True)

    objects = ReviewReportQuerySet.as_manager()

    class Meta:
        ordering = ["task", "cycle"]
        constraints = [
            models.UniqueConstraint(
                fields=["task", "cycle"], name="review_report_per_cycle"
            ),
            models.CheckConstraint(
                condition=models.Q(cycle__gte=1), name="review_cycle_from_1"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.task.task_id} review report-{self.cycle}"

    @property
    def path(self) -> str:
        return f"agent-review/{self.task.task_id}/report-{self.cycle}.yml"

    @property
    def blocking_count(self) -> int:
        """Blocking comments, counted from the comments themselves."""
        return sum(
            1 for comment in self.comments if comment.get("severity") == "blocking"
        )

    def tally_comments(self) -> None:
        """The feedback's blocking_count, suggestion_count and priority_order
        (blocking first, in the comments' order) for the report's comments as
        they are now: after a person's review on the pull request joined the
        reviewer's (docs/domain/tasks.md#review-report)."""
        comments = [c for c in self.comments if isinstance(c, dict)]
        blocking = [c.get("id") for c in comments if c.get("severity") == "blocking"]
        suggestions = [
            c.get("id") for c in comments if c.get("severity") == "suggestion"
        ]
        self.feedback = {
            **(self.feedback or {}),
            "blocking_count": len(blocking),
            "suggestion_count": len(suggestions),
            "priority_order": [i for i in (*blocking, *suggestions) if i],
        }
