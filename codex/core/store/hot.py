"""Hot lookups, declared by the domain and compiled by the store
(docs/architecture.md#fast-path).

A worker's step reads a few rows again and again (a task with its
repository, the newest review report, the pending control requests);
compiling their querysets costs more CPU than running them. The domain
declares such a lookup as a plain queryset method, marked:

    class FanOutQuerySet(models.QuerySet):
        @hot_row
        def of_parent(self, parent_id: int) -> models.QuerySet:
            return self.filter(parent_id=parent_id).order_by()[:1]

and callers write `FanOut.objects.of_parent(task.pk)`, which answers the row
or None. The store compiles the method's queryset once per process and
database, with stand-ins for its arguments, and runs it with the values in
their places (codex.core.store.compiled_query). Each argument is an int or a
str; keyword arguments shape the query instead (which annotations, say) and
are compiled as given, once per shape: they must be few and hashable. Called
on a queryset already narrowed (`FanOut.objects.filter(...)`), the
method runs as plain Django instead, so a narrowing is never dropped.

- `hot_row`: the first row's instance, or None (give the queryset its
  ordering and [:1]);
- `hot_rows`: every row's instance, in the queryset's order;
- `hot_values`: a values_list queryset's rows, as tuples;
- `hot_aggregate(group_by, **aggregates)`: the aggregates over the rows (whose
  filter pins `group_by` to one value) as a tuple, Nones when none match.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from django.db.models import QuerySet

from codex.core.store.compiled_query import (
    aggregate_row,
    all_rows,
    first_row,
    value_rows,
)


def _is_whole(queryset: QuerySet) -> bool:
    """Whether `queryset` is still its manager's whole table (nothing a
    compiled lookup would leave out)."""
    query = queryset.query
    return (
        not query.where.children
        and not query.is_sliced
        and not query.select_related
        and not query.annotations
        and not query.distinct
        and not query.values_select
        and queryset._result_cache is None
    )


def _declare(run_compiled: Callable, run_plain: Callable) -> Callable:
    def decorate(method: Callable[..., QuerySet]) -> Callable[..., Any]:
        name = f"{method.__module__}.{method.__qualname__}"

        @functools.wraps(method)
        def lookup(self: QuerySet, *values: Any, **shape: Any) -> Any:
            if not _is_whole(self):
                return run_plain(method(self, *values, **shape))
            whole = self.model._default_manager.all()
            key = f"{name}.{len(values)}.{sorted(shape.items())!r}"
            return run_compiled(
                self.model,
                key,
                lambda *slots: method(whole, *slots, **shape),
                *values,
            )

        lookup.hot = True
        return lookup

    return decorate


def _first(queryset: QuerySet) -> Any:
    # The method slices its queryset ([:1]): first() would reorder it.
    return next(iter(queryset), None)


hot_row = _declare(first_row, _first)
hot_rows = _declare(all_rows, list)
hot_values = _declare(value_rows, lambda queryset: [tuple(r) for r in queryset])


def hot_aggregate(group_by: str, **aggregates: Any) -> Callable:
    """A hot lookup of `aggregates` over the rows of the method's queryset,
    whose filter pins the column `group_by` to one value."""

    def compiled(model: Any, name: str, build: Callable, *values: Any) -> tuple:
        return aggregate_row(model, name, build, group_by, aggregates, *values)

    def plain(queryset: QuerySet) -> tuple:
        found = queryset.aggregate(**aggregates)
        return tuple(found[name] for name in aggregates)

    return _declare(compiled, plain)
