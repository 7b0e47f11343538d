"""A parent task fanned out to child agents, their reports, and the analysis."""

from codex.children.choices import (
    AnalysisTrigger,
    DecidedBy,
    Discrepancy,
    FanOutState,
    MergeStrategy,
    StatusType,
    WorkflowEvent,
)
from codex.children.models.analysis import CompletionAnalysis
from codex.children.models.child import Child
from codex.children.models.fan_out import FanOut
from codex.children.models.fan_out_queryset import (
    ANALYSIS_TIMEOUT,
    DEFAULT_WINDOW,
    MAX_CHILDREN,
)
from codex.children.models.report import ChildReport

__all__ = [
    "ANALYSIS_TIMEOUT",
    "DEFAULT_WINDOW",
    "MAX_CHILDREN",
    "AnalysisTrigger",
    "Child",
    "ChildReport",
    "CompletionAnalysis",
    "DecidedBy",
    "Discrepancy",
    "FanOut",
    "FanOutState",
    "MergeStrategy",
    "StatusType",
    "WorkflowEvent",
]
