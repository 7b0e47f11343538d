"""UPDATEs of one row written out directly, without compiling a queryset.

For the small writes every step of every task makes (its lease taken and
given back, a side effect's record closed, a run linked to its instance):
building each through a queryset and its compiler cost more CPU than sending
it (docs/architecture.md#fast-path). The SQL is plain (PostgreSQL and
SQLite alike) and each value goes through its field's `get_db_prep_save`, as
the ORM's UPDATE would send it. What needs the compiler is refused:
expressions, model instances, fields with their own placeholder, and fields
that are not a column of the model's own table.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import connections, router
from django.db.models import Model


def update_row(
    model: type[Model],
    pk: Any,
    values: dict[str, Any],
    *,
    condition: str = "",
    condition_params: Sequence[Any] = (),
    bump_version: bool = False,
) -> int:
    """`UPDATE` the row of `model` whose key is `pk`, setting `values` (field
    names, as in QuerySet.update), and only where `condition` (SQL on the
    row's columns, with its own %s parameters) holds too; `bump_version`
    raises its `version` by one as well. Returns the rows updated (0 or 1)."""
    connection = connections[router.db_for_write(model)]
    quote = connection.ops.quote_name
    meta = model._meta
    assignments, params = [], []
    if bump_version:
        assignments.append(f"{quote('version')} = {quote('version')} + 1")
    for name, value in values.items():
        if hasattr(value, "resolve_expression") or isinstance(value, Model):
            raise TypeError(f"{name}: a plain value is needed, not {value!r}")
        field = meta.get_field(name)
        if (
            not field.concrete
            or field.many_to_many
            or field.model._meta.concrete_model is not meta.concrete_model
            or hasattr(field, "get_placeholder")
        ):
            raise TypeError(f"{name}: a column of {meta.db_table} written as is")
        assignments.append(f"{quote(field.column)} = %s")
        params.append(field.get_db_prep_save(value, connection))
    sql = (
        f"UPDATE {quote(meta.db_table)} SET {', '.join(assignments)} "
        f"WHERE {quote(meta.pk.column)} = %s"
    )
    params.append(meta.pk.get_db_prep_value(pk, connection))
    if condition:
        sql += f" AND ({condition})"
        params += condition_params
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.rowcount
