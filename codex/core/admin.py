"""What operator-console pages share: the state-machine buttons, and a
paginator for the lists of the largest tables."""

from __future__ import annotations

import json
from typing import Any

from django.core.paginator import Paginator
from django.db import connections
from django.http import Http404, HttpRequest, HttpResponse
from django.utils.functional import cached_property
from django_fsm.admin import FSMAdminMixin


class CodexFSMAdminMixin(FSMAdminMixin):
    """django-fsm-2's admin buttons, but a transition page for a name that is not
    an operator-visible transition of the model is a 404, not a server error."""

    def fsm_transition_view(
        self, request: HttpRequest, object_id: str, transition_name: str, **kwargs: Any
    ) -> HttpResponse:
        method = getattr(self.model, transition_name, None)
        transitions = getattr(getattr(method, "_django_fsm", None), "transitions", None)
        if not transitions:
            raise Http404(f"{transition_name!r} is not a transition")
        if isinstance(transitions, dict):
            transitions = list(transitions.values())
        if not self.is_fsm_transition_visible(transitions[0]):
            raise Http404(f"{transition_name!r} is not an operator action")
        return super().fsm_transition_view(
            request, object_id, transition_name, **kwargs
        )


class EstimatedCountPaginator(Paginator):
    """A change list's paginator that does not count a large list: on
    PostgreSQL it asks the planner how many rows the list's query returns
    (EXPLAIN, from the statistics autovacuum keeps) and, when that is more
    than ESTIMATE_ABOVE, shows the estimate instead of running a COUNT(*)
    that reads every row (~0.1 s a million). Smaller lists and other
    databases are counted exactly; the pages themselves are exact."""

    # Below this many rows (by the planner's estimate) a count is cheap.
    ESTIMATE_ABOVE = 100_000

    @cached_property
    def count(self) -> int:
        estimate = self._estimate()
        if estimate is not None and estimate > self.ESTIMATE_ABOVE:
            return estimate
        return super().count

    def _estimate(self) -> int | None:
        queryset = self.object_list
        if not hasattr(queryset, "query") or queryset.query.combinator:
            return None
        database = connections[queryset.db]
        if database.vendor != "postgresql":
            return None
        sql, params = queryset.order_by().values("pk").query.sql_with_params()
        with database.cursor() as cursor:
            cursor.execute(f"EXPLAIN (FORMAT JSON) {sql}", params)
            plan = cursor.fetchone()[0]
        if isinstance(plan, str):
            plan = json.loads(plan)
        return int(plan[0]["Plan"]["Plan Rows"])
