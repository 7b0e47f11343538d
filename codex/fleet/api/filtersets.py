"""Query-string filters of the agent instance and agent run lists."""

from __future__ import annotations

from codex.core.api.filters import (
    TASK_PARAMETER_DESCRIPTION,
    ChoiceListFilter,
    FilterSet,
    IdentifierFilter,
)
from codex.fleet.models import (
    AgentInstance,
    AgentRun,
    InstanceStatus,
    InstanceType,
    RunStatus,
)
from codex.repositories.api.filtersets import RepositoryUrlFilter


class AgentInstanceFilterSet(FilterSet):
    status = ChoiceListFilter(field_name="status", allowed=InstanceStatus.values)
    type = ChoiceListFilter(field_name="type", allowed=InstanceType.values)
    repository = RepositoryUrlFilter(field_name="repository__url")
    task = IdentifierFilter(
        field_name="task__task_id", description=TASK_PARAMETER_DESCRIPTION
    )

    class Meta:
        model = AgentInstance
        fields: list[str] = []


class AgentRunFilterSet(FilterSet):
    status = ChoiceListFilter(field_name="status", allowed=RunStatus.values)
    task = IdentifierFilter(
        field_name="task__task_id", description=TASK_PARAMETER_DESCRIPTION
    )

    class Meta:
        model = AgentRun
        fields: list[str] = []
