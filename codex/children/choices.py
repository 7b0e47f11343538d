"""The enumerations of spec 001 (child agent completion tracking)."""

from __future__ import annotations

from django.db import models


class FanOutState(models.TextChoices):
    """ParentIssue state transitions of spec 001 §1."""

    CREATED = "created", "Created"
    CHILDREN_SPAWNED = "children_spawned", "Children spawned"
    AWAITING_COMPLETIONS = "awaiting_completions", "Awaiting completions"
    ANALYZING = "analyzing", "Analyzing"
    COMPLETE = "complete", "Complete"


class StatusType(models.TextChoices):
    """ChildStatus.status_type of spec 001 §2."""

    SUCCESS = "SUCCESS", "Success"
    FAILURE = "FAILURE", "Failure"
    PARTIAL = "PARTIAL", "Partial"
    AMBIGUOUS = "AMBIGUOUS", "Ambiguous"


class MergeStrategy(models.TextChoices):
    """CompletionAnalysis.merge_strategy of spec 001 §3."""

    MERGE_ALL = "MERGE_ALL", "Merge all"
    MERGE_PARTIAL = "MERGE_PARTIAL", "Merge partial"
    NO_MERGE = "NO_MERGE", "No merge"
    MANUAL_REVIEW = "MANUAL_REVIEW", "Manual review"


class DecidedBy(models.TextChoices):
    """Who chose the strategy: the rules of spec 001 §3, or Claude."""

    RULE = "rule", "Rule-based decision"
    MODEL = "model", "Model (Claude)"


class AnalysisTrigger(models.TextChoices):
    """Why the analysis started (spec 001 "Error States" and "Recovery")."""

    COUNT = "count", "All expected children reported"
    TIMEOUT = "timeout", "Completion window closed"
    MANUAL = "manual", "Manual override"


class Discrepancy(models.TextChoices):
    """Count overflow/underflow of spec 001 "Error States" 1 and 2."""

    NONE = "", "None"
    OVERFLOW = "overflow", "More children reported than expected"
    UNDERFLOW = "underflow", "Fewer children reported than expected"


class WorkflowEvent(models.TextChoices):
    """WorkflowEvent.event_type of spec 001 §4 (logged as Event kind "workflow")."""

    COMMENT_RECEIVED = "COMMENT_RECEIVED"
    COUNT_CHECK = "COUNT_CHECK"
    ANALYSIS_TRIGGERED = "ANALYSIS_TRIGGERED"
    ANALYSIS_COMPLETE = "ANALYSIS_COMPLETE"
