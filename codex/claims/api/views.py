"""Read-only API views of issue claims and backlog runs."""

from __future__ import annotations

from codex.accounts.permissions import OperationsReadPermission
from codex.claims.api.filtersets import BacklogRunFilterSet, IssueClaimFilterSet
from codex.claims.api.serializers import BacklogRunSerializer, IssueClaimSerializer
from codex.claims.models import BacklogRun, IssueClaim
from codex.core.api.views import ReadOnlyApiViewSet


class IssueClaimViewSet(ReadOnlyApiViewSet):
    """Issue claims, newest first (read-only)."""

    serializer_class = IssueClaimSerializer
    permission_classes = [OperationsReadPermission]
    queryset = IssueClaim.objects.select_related("repository")
    filterset_class = IssueClaimFilterSet


class BacklogRunViewSet(ReadOnlyApiViewSet):
    """Backlog runs, newest first (read-only)."""

    serializer_class = BacklogRunSerializer
    permission_classes = [OperationsReadPermission]
    queryset = BacklogRun.objects.select_related("repository").prefetch_related("tasks")
    filterset_class = BacklogRunFilterSet
