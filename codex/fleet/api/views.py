"""Read-only API views of agent instances and agent runs."""

from __future__ import annotations

from rest_framework import generics

from codex.accounts.permissions import OperationsReadPermission
from codex.core.api import FilteredListMixin
from codex.fleet.api.serializers import AgentInstanceSerializer, AgentRunSerializer
from codex.fleet.models import (
    AgentInstance,
    AgentRun,
    InstanceStatus,
    InstanceType,
    RunStatus,
)
from codex.tasks.api.base import ApiMixin

INSTANCES = AgentInstance.objects.select_related("repository", "task", "parent")
RUNS = AgentRun.objects.select_related("task", "instance")


class AgentInstanceList(ApiMixin, FilteredListMixin, generics.ListAPIView):
    serializer_class = AgentInstanceSerializer
    permission_classes = [OperationsReadPermission]
    queryset = INSTANCES
    choice_filters = {
        "status": ("status", InstanceStatus.values),
        "type": ("type", InstanceType.values),
    }
    repository_lookup = "repository__url"
    task_lookup = "task__task_id"


class AgentInstanceDetail(ApiMixin, generics.RetrieveAPIView):
    serializer_class = AgentInstanceSerializer
    permission_classes = [OperationsReadPermission]
    queryset = INSTANCES


class AgentRunList(ApiMixin, FilteredListMixin, generics.ListAPIView):
    serializer_class = AgentRunSerializer
    permission_classes = [OperationsReadPermission]
    queryset = RUNS
    choice_filters = {"status": ("status", RunStatus.values)}
    task_lookup = "task__task_id"


class AgentRunDetail(ApiMixin, generics.RetrieveAPIView):
    serializer_class = AgentRunSerializer
    permission_classes = [OperationsReadPermission]
    queryset = RUNS
