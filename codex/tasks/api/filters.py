"""Query-string filters of the task list."""

from __future__ import annotations

from django.http import QueryDict

from codex.core.api import filter_choices, filter_repository, raise_filter_errors
from codex.tasks.models import CreatedBy, Phase, Priority, Status

# parameter → (lookup, allowed values); several values may be comma-separated
# (status=blocked,paused).
TASK_FILTERS = {
    "status": ("status", Status.values),
    "phase": ("phase", Phase.values),
    "priority": ("priority", Priority.values),
    "created_by": ("created_by", CreatedBy.values),
}


def filter_tasks(queryset, params: QueryDict):
    """Apply ?status=&phase=&priority=&created_by=&repository= (400 on bad values).

    The API list applies the same filters through FilteredListMixin; this is for
    callers outside a view (the web pages).
    """
    queryset, errors = filter_choices(queryset, params, TASK_FILTERS)
    queryset = filter_repository(queryset, params, "repository__url", errors)
    raise_filter_errors(errors)
    return queryset
