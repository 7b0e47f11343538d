"""Read-only API views of child reports and completion analyses."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter
from rest_framework import generics
from rest_framework.exceptions import ValidationError

from codex.accounts.permissions import OperationsReadPermission
from codex.children.api.serializers import (
    ChildReportSerializer,
    CompletionAnalysisSerializer,
)
from codex.children.models import (
    ChildReport,
    CompletionAnalysis,
    MergeStrategy,
    StatusType,
)
from codex.core.api import FilteredListMixin
from codex.tasks.api.base import ApiMixin

REPORTS = ChildReport.objects.select_related("fan_out__parent", "child_task")
ANALYSES = CompletionAnalysis.objects.select_related("fan_out__parent")


class ChildReportList(ApiMixin, FilteredListMixin, generics.ListAPIView):
    """Child reports, newest first; ?task= the parent task."""

    serializer_class = ChildReportSerializer
    permission_classes = [OperationsReadPermission]
    queryset = REPORTS
    choice_filters = {"status_type": ("status_type", StatusType.values)}
    task_lookup = "fan_out__parent__task_id"

    def get_queryset(self):
        current = self.request.query_params.get("current")
        if current is None:
            return REPORTS
        if current not in ("true", "false"):
            raise ValidationError({"current": ["Use true or false."]})
        return REPORTS.filter(is_current=current == "true")

    def filter_parameters(self) -> list[OpenApiParameter]:
        return [
            OpenApiParameter(
                "current",
                OpenApiTypes.STR,
                enum=["true", "false"],
                description="true: each child's latest report only.",
            ),
            *super().filter_parameters(),
        ]


class ChildReportDetail(ApiMixin, generics.RetrieveAPIView):
    serializer_class = ChildReportSerializer
    permission_classes = [OperationsReadPermission]
    queryset = REPORTS


class CompletionAnalysisList(ApiMixin, FilteredListMixin, generics.ListAPIView):
    """Completion analyses, newest first; ?task= the parent task."""

    serializer_class = CompletionAnalysisSerializer
    permission_classes = [OperationsReadPermission]
    queryset = ANALYSES
    choice_filters = {"merge_strategy": ("merge_strategy", MergeStrategy.values)}
    task_lookup = "fan_out__parent__task_id"


class CompletionAnalysisDetail(ApiMixin, generics.RetrieveAPIView):
    serializer_class = CompletionAnalysisSerializer
    permission_classes = [OperationsReadPermission]
    queryset = ANALYSES
