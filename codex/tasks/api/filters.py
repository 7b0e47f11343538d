"""Query-string filters of the task list."""

from __future__ import annotations

from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import QueryDict
from rest_framework.exceptions import ValidationError

from codex.repositories.models import normalize_repository_url
from codex.tasks.models import CreatedBy, Phase, Priority, Status

CHOICE_FILTERS = {
    "status": Status.values,
    "phase": Phase.values,
    "priority": Priority.values,
    "created_by": CreatedBy.values,
}


def filter_tasks(queryset, params: QueryDict):
    """Apply ?status=&phase=&priority=&created_by=&repository= (400 on bad values).

    Several values of one filter may be given comma-separated (status=blocked,paused).
    """
    errors = {}
    for name, allowed in CHOICE_FILTERS.items():
        raw = params.get(name)
        if raw is None:
            continue
        values = [value.strip() for value in raw.split(",") if value.strip()]
        unknown = [value for value in values if value not in allowed]
        if unknown or not values:
            errors[name] = [
                f"Unknown value {', '.join(unknown) or '(empty)'}; "
                f"use one of {', '.join(allowed)}."
            ]
            continue
        queryset = queryset.filter(**{f"{name}__in": values})
    if "repository" in params:
        try:
            url = normalize_repository_url(params["repository"])
        except DjangoValidationError as exc:
            errors["repository"] = exc.messages
        else:
            queryset = queryset.filter(repository__url=url)
    if errors:
        raise ValidationError(errors)
    return queryset
