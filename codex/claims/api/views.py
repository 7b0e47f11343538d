"""Read-only API views of issue claims and backlog runs."""

from __future__ import annotations

from rest_framework import generics

from codex.accounts.permissions import OperationsReadPermission
from codex.claims.api.serializers import BacklogRunSerializer, IssueClaimSerializer
from codex.claims.models import BacklogRun, BacklogState, ClaimState, IssueClaim
from codex.core.api import FilteredListMixin
from codex.tasks.api.base import ApiMixin

CLAIMS = IssueClaim.objects.select_related("repository")
BACKLOG_RUNS = BacklogRun.objects.select_related("repository").prefetch_related("tasks")


class IssueClaimList(ApiMixin, FilteredListMixin, generics.ListAPIView):
    serializer_class = IssueClaimSerializer
    permission_classes = [OperationsReadPermission]
    queryset = CLAIMS
    choice_filters = {"state": ("state", ClaimState.values)}
    repository_lookup = "repository__url"


class IssueClaimDetail(ApiMixin, generics.RetrieveAPIView):
    serializer_class = IssueClaimSerializer
    permission_classes = [OperationsReadPermission]
    queryset = CLAIMS


class BacklogRunList(ApiMixin, FilteredListMixin, generics.ListAPIView):
    serializer_class = BacklogRunSerializer
    permission_classes = [OperationsReadPermission]
    queryset = BACKLOG_RUNS
    choice_filters = {"state": ("state", BacklogState.values)}
    repository_lookup = "repository__url"


class BacklogRunDetail(ApiMixin, generics.RetrieveAPIView):
    serializer_class = BacklogRunSerializer
    permission_classes = [OperationsReadPermission]
    queryset = BACKLOG_RUNS
