"""Query-string filters of the child report and completion analysis lists."""

from __future__ import annotations

from django.db.models import QuerySet

from codex.children.models import (
    ChildReport,
    CompletionAnalysis,
    MergeStrategy,
    StatusType,
)
from codex.core.api.filters import (
    TASK_PARAMETER_DESCRIPTION,
    ChoiceListFilter,
    FilterSet,
    IdentifierFilter,
    OneChoiceFilter,
)


class ChildReportFilterSet(FilterSet):
    """?current=true: each child's latest report only; ?task= the parent task."""

    current = OneChoiceFilter(
        allowed=["true", "false"],
        method="filter_current",
        description="true: each child's latest report only.",
        error_message="Use true or false.",
    )
    status_type = ChoiceListFilter(field_name="status_type", allowed=StatusType.values)
    task = IdentifierFilter(
        field_name="fan_out__parent__task_id", description=TASK_PARAMETER_DESCRIPTION
    )

    class Meta:
        model = ChildReport
        fields: list[str] = []

    def filter_current(self, queryset: QuerySet, name: str, value: str) -> QuerySet:
        return queryset.filter(is_current=value == "true")


class CompletionAnalysisFilterSet(FilterSet):
    """?merge_strategy=; ?task= the parent task."""

    merge_strategy = ChoiceListFilter(
        field_name="merge_strategy", allowed=MergeStrategy.values
    )
    task = IdentifierFilter(
        field_name="fan_out__parent__task_id", description=TASK_PARAMETER_DESCRIPTION
    )

    class Meta:
        model = CompletionAnalysis
        fields: list[str] = []
