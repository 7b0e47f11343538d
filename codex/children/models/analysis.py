"""The completion analysis of a fan-out (docs/domain/fan-out.md#merge-decision)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.utils import timezone

from codex.children.choices import (
    AnalysisTrigger,
    DecidedBy,
    Discrepancy,
    MergeStrategy,
)
from codex.children.decision import MERGING_STRATEGIES, Decision
from codex.children.parsing import MAX_PR_NUMBER


def discrepancy_of(expected: int, reporting: int) -> str:
    """Overflow, underflow, or none (docs/domain/fan-out.md#fan-out-limits)."""
    if reporting > expected:
        return Discrepancy.OVERFLOW
    if reporting < expected:
        return Discrepancy.UNDERFLOW
    return Discrepancy.NONE


class CompletionAnalysisQuerySet(models.QuerySet):
    def store(
        self,
        fan_out,
        decision: Decision,
        reports: Sequence[Any],
        *,
        trigger: str,
    ) -> tuple[CompletionAnalysis, bool]:
        """Keep `decision` (already validated) as the fan-out's one analysis.

        Returns (analysis, changed). The same decision over the same reports
        leaves the stored row untouched (docs/domain/fan-out.md#analysis-validation);
        a different one replaces it in place, never a second row.
        """
        existing = self.filter(fan_out=fan_out).first()
        final_pr = decision.final_pr_number
        if (
            final_pr is None
            and existing is not None
            and decision.merge_strategy in MERGING_STRATEGIES
        ):
            # A consolidation PR opened after the first run is not undone by a
            # re-run that still merges.
            final_pr = existing.final_pr_number
        values = {
            "merge_strategy": decision.merge_strategy,
            "prs_to_merge": list(decision.prs_to_merge),
            "reasoning": decision.reasoning,
            "summary": decision.summary,
            "final_pr_number": final_pr,
            "decided_by": decision.decided_by,
            "successful_children": list(decision.successful_children),
            "failed_children": list(decision.failed_children),
            "partial_children": list(decision.partial_children),
            "ambiguous_children": list(decision.ambiguous_children),
            "total_children": decision.total_children,
            "successful_count": len(decision.successful_children),
            "failed_count": len(decision.failed_children),
            "partial_count": len(decision.partial_children),
            "ambiguous_count": len(decision.ambiguous_children),
            "expected_child_count": fan_out.expected_child_count,
            "reporting_count": len(reports),
            "discrepancy": discrepancy_of(fan_out.expected_child_count, len(reports)),
            "comment_ids": sorted(r.comment_id for r in reports),
        }
        if existing is None:
            return self.create(fan_out=fan_out, trigger=trigger, **values), True
        if all(getattr(existing, name) == value for name, value in values.items()):
            return existing, False
        for name, value in values.items():
            setattr(existing, name, value)
        existing.trigger = trigger
        existing.analysed_at = timezone.now()
        existing.save()
        return existing, True


class CompletionAnalysis(models.Model):
    """What to do with the children's work: the merge strategy and its reasons.

    Rules (docs/domain/fan-out.md#analysis-validation, enforced by
    `validate_analysis` before storing and by the constraints below):
    total_children = successful + failed + partial
    (ambiguous children are counted apart); the pull requests to merge come only
    from successful children; the strategy aligns with the statuses. One per
    fan-out: a re-run updates it, identical input leaves it as it was.
    `discrepancy` notes more or fewer reporting children than expected.
    """

    fan_out = models.OneToOneField(
        "children.FanOut", on_delete=models.CASCADE, related_name="analysis"
    )
    merge_strategy = models.CharField(max_length=20, choices=MergeStrategy.choices)
    prs_to_merge = models.JSONField(default=list, blank=True)
    reasoning = models.TextField()
    summary = models.TextField(blank=True)
    final_pr_number = models.PositiveIntegerField(
        null=True,
        blank=True,
        validators=[MinValueValidator(1), MaxValueValidator(MAX_PR_NUMBER)],
        help_text="The consolidation pull request, once created.",
    )
    decided_by = models.CharField(max_length=10, choices=DecidedBy.choices)
    trigger = models.CharField(max_length=10, choices=AnalysisTrigger.choices)

    successful_children = models.JSONField(default=list, blank=True)
    failed_children = models.JSONField(default=list, blank=True)
    partial_children = models.JSONField(default=list, blank=True)
    ambiguous_children = models.JSONField(default=list, blank=True)
    total_children = models.PositiveSmallIntegerField()
    successful_count = models.PositiveSmallIntegerField()
    failed_count = models.PositiveSmallIntegerField()
    partial_count = models.PositiveSmallIntegerField()
    ambiguous_count = models.PositiveSmallIntegerField(default=0)

    expected_child_count = models.PositiveSmallIntegerField()
    reporting_count = models.PositiveSmallIntegerField()
    discrepancy = models.CharField(
        max_length=10, choices=Discrepancy.choices, blank=True
    )
    comment_ids = models.JSONField(
        default=list, blank=True, help_text="The comments of the reports analysed."
    )
    analysed_at = models.DateTimeField(default=timezone.now)

    objects = CompletionAnalysisQuerySet.as_manager()

    class Meta:
        verbose_name_plural = "completion analyses"
        ordering = ["-analysed_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(
                    total_children=models.F("successful_count")
                    + models.F("failed_count")
                    + models.F("partial_count")
                ),
                name="children_analysis_total_is_sum",
            ),
            models.CheckConstraint(
                condition=models.Q(
                    reporting_count=models.F("total_children")
                    + models.F("ambiguous_count")
                ),
                name="children_analysis_reporting_is_total_plus_ambiguous",
            ),
            models.CheckConstraint(
                condition=models.Q(merge_strategy__in=MergeStrategy.values),
                name="children_analysis_strategy_valid",
            ),
        ]
        indexes = [
            models.Index(
                fields=["merge_strategy", "-analysed_at"], name="children_analysis_str"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.merge_strategy} ({self.decided_by})"
