"""Query-string filters of the task, event, artifact and escalation lists."""

from __future__ import annotations

from django.db.models import QuerySet

from codex.core.api.filters import (
    TASK_PARAMETER_DESCRIPTION,
    ChoiceListFilter,
    FilterSet,
    IdentifierFilter,
    OneChoiceFilter,
    TextFilter,
)
from codex.events.models import Event, EventKind
from codex.repositories.api.filtersets import RepositoryUrlFilter
from codex.tasks.models import (
    Artifact,
    CreatedBy,
    Escalation,
    EscalationReason,
    Phase,
    Priority,
    Status,
    Task,
)


class TaskFilterSet(FilterSet):
    """?status=&phase=&priority=&created_by= (several values comma-separated:
    status=blocked,paused) and ?repository=<url>."""

    status = ChoiceListFilter(field_name="status", allowed=Status.values)
    phase = ChoiceListFilter(field_name="phase", allowed=Phase.values)
    priority = ChoiceListFilter(field_name="priority", allowed=Priority.values)
    created_by = ChoiceListFilter(field_name="created_by", allowed=CreatedBy.values)
    repository = RepositoryUrlFilter(field_name="repository__url")

    class Meta:
        model = Task
        fields: list[str] = []


class EventFilterSet(FilterSet):
    kind = ChoiceListFilter(field_name="kind", allowed=EventKind.values)

    class Meta:
        model = Event
        fields: list[str] = []


class ArtifactFilterSet(FilterSet):
    name = TextFilter(field_name="name", description="One document, e.g. spec.md.")

    class Meta:
        model = Artifact
        fields: list[str] = []


ESCALATION_STATES = ["open", "resolved", "all"]


class EscalationFilterSet(FilterSet):
    """Open escalations unless ?state=resolved|all; ?reason=, ?task=."""

    state = OneChoiceFilter(
        allowed=ESCALATION_STATES, default="open", method="filter_state"
    )
    reason = ChoiceListFilter(field_name="reason", allowed=EscalationReason.values)
    task = IdentifierFilter(
        field_name="task__task_id", description=TASK_PARAMETER_DESCRIPTION
    )

    class Meta:
        model = Escalation
        fields: list[str] = []

    def filter_state(self, queryset: QuerySet, name: str, value: str) -> QuerySet:
        if value == "open":
            return queryset.open()
        if value == "resolved":
            return queryset.filter(resolved_at__isnull=False)
        return queryset
