"""Read-only API views of child reports and completion analyses."""

from __future__ import annotations

from codex.accounts.permissions import OperationsReadPermission
from codex.children.api.filtersets import (
    ChildReportFilterSet,
    CompletionAnalysisFilterSet,
)
from codex.children.api.serializers import (
    ChildReportSerializer,
    CompletionAnalysisSerializer,
)
from codex.children.models import ChildReport, CompletionAnalysis
from codex.core.api.views import ReadOnlyApiViewSet


class ChildReportViewSet(ReadOnlyApiViewSet):
    """Child reports, newest first (read-only); ?task= the parent task."""

    serializer_class = ChildReportSerializer
    permission_classes = [OperationsReadPermission]
    queryset = ChildReport.objects.select_related("fan_out__parent", "child_task")
    filterset_class = ChildReportFilterSet


class CompletionAnalysisViewSet(ReadOnlyApiViewSet):
    """Completion analyses, newest first (read-only); ?task= the parent task."""

    serializer_class = CompletionAnalysisSerializer
    permission_classes = [OperationsReadPermission]
    queryset = CompletionAnalysis.objects.select_related("fan_out__parent")
    filterset_class = CompletionAnalysisFilterSet
