"""The enumerations of a fan-out (docs/domain/fan-out.md)."""

from __future__ import annotations

from django.db import models


class FanOutState(models.TextChoices):
    """A fan-out's states (docs/domain/fan-out.md#fan-out-state)."""

    CREATED = "created", "Created"
    CHILDREN_SPAWNED = "children_spawned", "Children spawned"
    AWAITING_COMPLETIONS = "awaiting_completions", "Awaiting completions"
    ANALYZING = "analyzing", "Analyzing"
    COMPLETE = "complete", "Complete"


class StatusType(models.TextChoices):
    """What a child's report says (docs/domain/fan-out.md#child-reports)."""

    SUCCESS = "SUCCESS", "Success"
    FAILURE = "FAILURE", "Failure"
    PARTIAL = "PARTIAL", "Partial"
    AMBIGUOUS = "AMBIGUOUS", "Ambiguous"


class MergeStrategy(models.TextChoices):
    """What to merge (docs/domain/fan-out.md#merge-decision)."""

    MERGE_ALL = "MERGE_ALL", "Merge all"
    MERGE_PARTIAL = "MERGE_PARTIAL", "Merge partial"
    NO_MERGE = "NO_MERGE", "No merge"
    MANUAL_REVIEW = "MANUAL_REVIEW", "Manual review"


class DecidedBy(models.TextChoices):
    """Who chose the strategy: the rules of docs/domain/fan-out.md#merge-decision,
    or Claude."""

    RULE = "rule", "Rule-based decision"
    MODEL = "model", "Model (Claude)"


class AnalysisTrigger(models.TextChoices):
    """Why the analysis started (docs/domain/fan-out.md#fan-out-state)."""

    COUNT = "count", "All expected children reported"
    TIMEOUT = "timeout", "Completion window closed"
    MANUAL = "manual", "Manual override"


class Discrepancy(models.TextChoices):
    """Count overflow/underflow (docs/domain/fan-out.md#fan-out-limits)."""

    NONE = "", "None"
    OVERFLOW = "overflow", "More children reported than expected"
    UNDERFLOW = "underflow", "Fewer children reported than expected"


class WorkflowEvent(models.TextChoices):
    """A fan-out's workflow events (docs/domain/fan-out.md#fan-out-state), logged
    as Event kind "workflow"."""

    COMMENT_RECEIVED = "COMMENT_RECEIVED"
    COUNT_CHECK = "COUNT_CHECK"
    ANALYSIS_TRIGGERED = "ANALYSIS_TRIGGERED"
    ANALYSIS_COMPLETE = "ANALYSIS_COMPLETE"
