"""Queries run on every request, compiled to SQL once.

Django compiles a queryset to SQL each time it runs. For the lookups every
API request makes (its token with user and roles, the repository of a new
task) and every worker step makes (first_row), compiling cost more CPU than
sending the query and reading its row, for SQL that differs only in its
parameters.

This module and codex.core.store.statements are the only ones that use Django's
internals (the compiler's select, col_count, klass_info, annotation_col_map,
get_converters and apply_converters, get_related_populators);
codex.core.store.django_internals pins them (docs/architecture.md#fast-path).
A compiled query of another shape than the one verified raises
FastPathInvariantError when it is built.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from django.db import connections, router
from django.db.models import Model, QuerySet
from django.db.models.query import get_related_populators

from codex.core.store.django_internals import FastPathInvariantError


class CompiledValues:
    """A queryset compiled once with `slots` standing for its parameters;
    `all(*values)` runs it with `values` there instead, in the same order,
    and returns its rows as tuples (a values_list queryset, aggregates
    allowed) through the compiler's own converters (a Decimal sum is a
    Decimal on SQLite too).

    Each run goes through a cursor of the queryset's database, so it is logged
    and counted like any other query. Build one per database (the SQL is the
    backend's).
    """

    def __init__(self, queryset: QuerySet, *slots: Any) -> None:
        self.using = queryset.db
        self.compiler = queryset.query.get_compiler(using=self.using)
        self.sql, params = self.compiler.as_sql()
        self.params = list(params)
        for slot in slots:
            if self.params.count(slot) != 1:
                raise ValueError(f"{slot!r} must be exactly one parameter of the query")
        self.slots = [self.params.index(slot) for slot in slots]
        self.check_shape(queryset)
        # What results_iter works out at every run, worked out once: the
        # converters of the selected columns (a third of a hot lookup's CPU).
        columns = [c[0] for c in self.compiler.select[: self.compiler.col_count]]
        if self.compiler.has_composite_fields(columns):
            raise FastPathInvariantError("a compiled query selects a composite key")
        self.converters = self.compiler.get_converters(columns)

    def check_shape(self, queryset: QuerySet) -> None:
        if not self.sql.lstrip().upper().startswith("SELECT"):
            raise FastPathInvariantError(
                f"the compiled query is not a SELECT: {self.sql[:60]}"
            )

    def all(self, *values: Any) -> list:
        """Every row with `values` in the slots, in the query's order."""
        return [tuple(row) for row in self._rows(values, limit=None)]

    def _rows(self, values: tuple, limit: int | None) -> Iterator:
        if len(values) != len(self.slots):
            raise TypeError(f"{len(self.slots)} values expected, not {len(values)}")
        params = list(self.params)
        for slot, value in zip(self.slots, values, strict=True):
            params[slot] = value
        with connections[self.using].cursor() as cursor:
            cursor.execute(self.sql, params)
            rows = cursor.fetchall() if limit is None else cursor.fetchmany(limit)
        if not self.converters:
            return rows
        return self.compiler.apply_converters(rows, self.converters)


class CompiledQuery(CompiledValues):
    """A queryset of model instances (select_related and annotations allowed)
    compiled once as CompiledValues is; `first(*values)` and `all(*values)`
    return instances: rows become instances as ModelIterable makes them, with
    the compiler's own converters, related populators and annotation columns.
    """

    def __init__(self, queryset: QuerySet, *slots: Any) -> None:
        super().__init__(queryset, *slots)
        select, klass_info = self.compiler.select, self.compiler.klass_info
        self.model = klass_info["model"]
        fields = klass_info["select_fields"]
        self.model_columns = slice(fields[0], fields[-1] + 1)
        self.init_list = [
            column[0].target.attname for column in select[self.model_columns]
        ]
        self.related_populators = get_related_populators(klass_info, select, self.using)
        self.annotation_col_map = self.compiler.annotation_col_map

    def check_shape(self, queryset: QuerySet) -> None:
        check_compiled_shape(self.sql, self.compiler.klass_info, queryset)

    def first(self, *values: Any) -> Model | None:
        """The first row's instance with `values` in the slots, or None."""
        rows = self._instances(values, limit=1)
        return rows[0] if rows else None

    def all(self, *values: Any) -> list[Model]:
        """Every row's instance with `values` in the slots, in the query's order."""
        return self._instances(values, limit=None)

    def _instances(self, values: tuple, limit: int | None) -> list[Model]:
        instances = []
        for row in self._rows(values, limit):
            instance = self.model.from_db(
                self.using, self.init_list, row[self.model_columns]
            )
            for populator in self.related_populators:
                populator.populate(row, instance)
            for name, column in self.annotation_col_map.items():
                setattr(instance, name, row[column])
            instances.append(instance)
        return instances


def check_compiled_shape(sql: str, klass_info: Any, queryset: QuerySet) -> None:
    """The compiled query is a SELECT of the queryset's model whose columns
    are one run (what CompiledQuery slices out of each row)."""
    if not sql.lstrip().upper().startswith("SELECT"):
        raise FastPathInvariantError(f"the compiled query is not a SELECT: {sql[:60]}")
    if not isinstance(klass_info, dict) or not {"model", "select_fields"} <= set(
        klass_info
    ):
        raise FastPathInvariantError(
            "SQLCompiler.klass_info lost its model or select_fields: re-check "
            "codex.core.store.compiled_query (codex.core.store.django_internals)"
        )
    if klass_info["model"] is not queryset.model:
        raise FastPathInvariantError(
            f"the compiled query selects {klass_info['model']!r}, "
            f"not {queryset.model!r}"
        )
    fields = klass_info["select_fields"]
    if not fields or list(fields) != list(range(fields[0], fields[-1] + 1)):
        raise FastPathInvariantError(
            f"the model's columns are not one run in the select list: {fields}"
        )


_CACHE: dict[tuple, CompiledQuery] = {}


def compiled(
    name: str, using: str, build: Callable[[], CompiledQuery]
) -> CompiledQuery:
    """The CompiledQuery `name` on database `using`, built by `build()` (a
    CompiledQuery of a queryset on `using`) the first time it is asked for."""
    key = (name, using, connections[using].vendor)
    query = _CACHE.get(key)
    if query is None:
        query = _CACHE[key] = build()
    return query


def first_row(
    model: type[Model], name: str, build: Callable[..., QuerySet], *values: Any
) -> Model | None:
    """The first row of `build(*slots)`, a queryset of `model` filtering on one
    slot per value, run with `values` in the slots: the hot lookups of a
    worker's step, compiled once per process and database under `name` (which
    must name one query shape).

    A slot is a stand-in of its value's type that the query holds nowhere
    else (CompiledQuery checks): an integer every integer field accepts (a
    negative one would make Django drop a lookup on a positive field) for an
    int, a bracketed label for a str. Give a
    queryset its ordering and limit ([:1]); without one the row is the
    database's pick.
    """
    return _compiled_with_slots(model, name, build, values).first(*values)


def all_rows(
    model: type[Model], name: str, build: Callable[..., QuerySet], *values: Any
) -> list[Model]:
    """Every row of `build(*slots)` as first_row runs it (the same slots and
    rules): the hot lists of a worker's step, such as the task's pending
    control requests. Give the queryset its ordering."""
    return _compiled_with_slots(model, name, build, values).all(*values)


def value_rows(
    model: type[Model], name: str, build: Callable[..., QuerySet], *values: Any
) -> list[tuple]:
    """The rows of `build(*slots)`, a values_list queryset of `model`, as
    tuples: first_row's slots and rules for the hot sums of a step (a task's
    spend)."""
    return _compiled_with_slots(model, name, build, values, CompiledValues).all(*values)


def aggregate_row(
    model: type[Model],
    name: str,
    build: Callable[..., QuerySet],
    group_by: str,
    aggregates: dict[str, Any],
    *values: Any,
) -> tuple:
    """The `aggregates` (name: aggregate expression) over the rows of
    `build(*slots)`, a queryset of `model` whose filter pins the column
    `group_by` to one value, as a tuple in their order, compiled once as
    value_rows is: the hot sums and maxima of a step (a task's spend, the
    highest agent number taken). Nones when no row matches, as an aggregate
    over no rows is NULL.

    QuerySet.aggregate runs at once, so the aggregates are annotated on the
    pinned column's group instead: one group, or none when no row matches."""
    rows = value_rows(
        model,
        name,
        lambda *slots: (
            build(*slots)
            .order_by()
            .values(group_by)
            .annotate(**aggregates)
            .values_list(*aggregates)
        ),
        *values,
    )
    return rows[0] if rows else (None,) * len(aggregates)


def _compiled_with_slots(
    model: type[Model],
    name: str,
    build: Callable[..., QuerySet],
    values: tuple,
    kind: type = CompiledQuery,
) -> Any:
    for value in values:
        if not isinstance(value, (int, str)) or isinstance(value, bool):
            # None would compare as "= NULL" (no row) where the ORM says IS NULL.
            raise TypeError(f"a slot holds an int or a str, not {value!r}")
    using = router.db_for_read(model)

    def build_query() -> Any:
        slots = [_slot(value, index) for index, value in enumerate(values)]
        return kind(build(*slots).using(using), *slots)

    return compiled(name, using, build_query)


def _slot(value: int | str, index: int) -> int | str:
    if isinstance(value, int):
        return 31_000 + index
    return f"<compiled query slot {index}>"
