"""Read-only API views of agent instances and agent runs."""

from __future__ import annotations

from codex.accounts.permissions import OperationsReadPermission
from codex.core.api.views import ReadOnlyApiViewSet
from codex.fleet.api.filtersets import AgentInstanceFilterSet, AgentRunFilterSet
from codex.fleet.api.serializers import AgentInstanceSerializer, AgentRunSerializer
from codex.fleet.models import AgentInstance, AgentRun


class AgentInstanceViewSet(ReadOnlyApiViewSet):
    """Agent instances, newest first (read-only)."""

    serializer_class = AgentInstanceSerializer
    permission_classes = [OperationsReadPermission]
    queryset = AgentInstance.objects.select_related("repository", "task", "parent")
    filterset_class = AgentInstanceFilterSet


class AgentRunViewSet(ReadOnlyApiViewSet):
    """Agent runs with their counts, tokens and cost, newest first (read-only)."""

    serializer_class = AgentRunSerializer
    permission_classes = [OperationsReadPermission]
    queryset = AgentRun.objects.select_related("task", "instance")
    filterset_class = AgentRunFilterSet
