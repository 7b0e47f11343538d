"""The one-statement write fast path: how a versioned save reaches the
database, and the only module that writes through Django's internals
(docs/architecture.md#fast-path; the internals and the check that pins them
are in codex.core.store.django_internals).

A versioned save (codex.core.store.versioned.VersionedLeasedModel) hands Django's
`_do_update` arguments and a `VersionedWrite` (the version read, the lease
holder, the rows that belong to the change) to `update_versioned_row`, which
says whether the row matched. On PostgreSQL a change and its rows (its
events, the next step's job row) are sent as one data-modifying CTE: the rows
are inserted only when the change applied, atomically and in one round trip,
with no BEGIN/COMMIT needed around it outside a transaction:

    WITH updated AS (UPDATE ... RETURNING 1),         -- or: created AS (INSERT
         r0 AS (INSERT ... SELECT ... FROM updated      --  ... RETURNING id AS
                RETURNING id AS written),               --  written), a row's
         r1 AS (...)                                    --  key to it read from
    SELECT r0.written, r1.written FROM r0 CROSS JOIN r1 --  created.written

A new agent run's or instance's events name it by its id in their data: that
key of the JSON takes created.written too (`key_in_json`, a jsonb_set).
Elsewhere the UPDATE goes through the ORM and the rows follow it in the same
transaction. The statement text depends only on the models (and, for an
INSERT, on which field of a row points at the new one), so it is built once
per model. Invariants (one row per write, the version raised by one, the save
reaching `_do_update`) raise FastPathInvariantError, never a bare assert.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from contextlib import nullcontext
from datetime import datetime
from typing import Any

from django.db import connections, models, transaction
from django.db.models import Q

from codex.core.store.django_internals import FastPathInvariantError
from codex.core.store.leases import lease_clause, lease_is_free

try:  # psycopg 3, the PostgreSQL driver; absent on an SQLite-only install
    from psycopg import _queries as _psycopg_queries
except ImportError:  # pragma: no cover
    _psycopg_queries = None

# psycopg keeps the parsed form of a statement's text only for statements of
# at most 50 parameters (MAX_CACHED_STATEMENT_PARAMS); the writes built here
# carry 60 and more (a task, its event and its job row), so each was parsed
# again on every call: 6 % of a POST /api/tasks/'s CPU. The cache is an LRU of
# 128 texts, and these texts are one per model combination: raising the bound
# keeps them parsed without letting the cache grow.
STATEMENT_PARAMS_CACHED = 200
if (
    _psycopg_queries is not None
    and (getattr(_psycopg_queries, "MAX_CACHED_STATEMENT_PARAMS", None) or 0)
    < STATEMENT_PARAMS_CACHED
):
    _psycopg_queries.MAX_CACHED_STATEMENT_PARAMS = STATEMENT_PARAMS_CACHED


@dataclasses.dataclass(eq=False)
class VersionedWrite:
    """One versioned save of an existing row, in progress.

    Django calls `_do_update` with its own arguments only, so the model
    attaches this to itself for the length of one save
    (VersionedLeasedModel.writing) and passes it here explicitly. In:
    `expected_version` (the version read), `holder` (the lease the saver
    holds, or None), `rows` (unsaved rows to write with the UPDATE). Out:
    `sent` (the UPDATE went through update_versioned_row) and `rows_written`.
    """

    expected_version: int | None = None
    holder: str | None = None
    rows: list[models.Model] = dataclasses.field(default_factory=list)
    sent: bool = False
    rows_written: bool = False


def update_versioned_row(
    obj: models.Model,
    write: VersionedWrite,
    *,
    base_qs: models.QuerySet,
    using: str,
    pk_val: Any,
    values: list,
    now: datetime,
) -> bool:
    """The UPDATE of `obj`'s versioned save (`base_qs`, `using`, `pk_val` and
    `values`, the (field, model, value) triples, as Django's `_do_update` got
    them) with the version read and a free, expired or `write.holder`'s lease
    in its WHERE clause, and `write.rows` with it. True when the row matched,
    its rows written too; False when it did not, and nothing was written.
    """
    expected = write.expected_version
    if expected is None:
        raise FastPathInvariantError(f"a versioned write of {obj!r} without a version")
    check_version_raised(obj, values, expected)
    write.sent = True
    rows = write.rows
    connection = connections[using]
    if rows and connection.vendor == "postgresql" and not base_qs.query.where:
        update = versioned_update_sql(
            obj, using, pk_val, expected, now, write.holder, values
        )
        if update is not None:
            write.rows_written = update_with_rows(update, rows, using)
            return write.rows_written
    allowed = lease_is_free(now)
    if write.holder:
        allowed |= Q(lease_holder=write.holder)
    filtered = base_qs.filter(allowed, pk=pk_val, version=expected)
    # Outside a transaction (the caller counted on the one statement above),
    # the UPDATE and its rows need one of their own.
    own_transaction = bool(rows) and not connection.in_atomic_block
    with transaction.atomic(using=using) if own_transaction else nullcontext():
        if not one_row(filtered._update(values), obj):
            return False
        insert_rows(rows, using)
        write.rows_written = True
    return True


def check_version_raised(obj: models.Model, values: list, expected: int) -> None:
    """`values` (Django's update triples) set `version` to `expected` + 1."""
    for field, _model, value in values:
        if field.attname == "version":
            if value != expected + 1:
                raise FastPathInvariantError(
                    f"the save of {obj!r} writes version {value!r}, not "
                    f"{expected + 1} (read {expected})"
                )
            return
    raise FastPathInvariantError(
        f"the save of {obj!r} does not write its version: Django's update "
        "values changed shape (codex.core.store.django_internals)"
    )


def one_row(count: int, obj: models.Model) -> bool:
    """Whether a write by primary key matched its row; more than one is a
    broken WHERE clause."""
    if count > 1:
        raise FastPathInvariantError(
            f"the write of {obj!r} by its key matched {count} rows"
        )
    return count == 1


def versioned_update_sql(
    obj: models.Model,
    using: str,
    pk_val: Any,
    expected: int,
    now: datetime,
    holder: str | None,
    values: list,
) -> tuple[str, list] | None:
    """The UPDATE of update_versioned_row (the version read, a free, expired
    or `holder`'s lease, in its WHERE clause), written out directly: building it
    through a queryset and its compiler was a third of a transition's CPU.
    None when a value needs the ORM's compiler (an expression, a placeholder).
    """
    connection = connections[using]
    meta = obj._meta
    quote = connection.ops.quote_name
    assignments, params = [], []
    for field, _model, value in values:
        if hasattr(value, "resolve_expression") or hasattr(field, "get_placeholder"):
            return None
        if hasattr(value, "prepare_database_save"):
            return None  # a model instance: the compiler turns it into its key
        assignments.append(f"{quote(field.column)} = %s")
        params.append(field.get_db_prep_save(value, connection))
    lease, lease_params = lease_clause(type(obj), connection, now, holder)
    params += [meta.pk.get_db_prep_value(pk_val, connection), expected, *lease_params]
    sql = (
        f"UPDATE {quote(meta.db_table)} SET {', '.join(assignments)} "
        f"WHERE {quote(meta.pk.column)} = %s AND {quote('version')} = %s "
        f"AND ({lease})"
    )
    return sql, params


# A type's length or precision: "varchar(200)", "numeric(10, 4)".
TYPMOD = re.compile(r"\([^)]*\)")


def typed_placeholder(field: models.Field, connection) -> str:
    """A placeholder for `field` in a SELECT list, cast to its type (a bare
    literal there is text to PostgreSQL), without the type's length or
    precision: an explicit CAST to varchar(200) would cut a longer value short
    in silence, where the INSERT into the column refuses it (DataError)."""
    return f"CAST(%s AS {TYPMOD.sub('', field.cast_db_type(connection))})"


@functools.cache
def _insert_select(
    model: type[models.Model],
    using: str,
    source: str,
    link: str | None,
    key_in_json: tuple[str, str] | None = None,
) -> tuple[list[models.Field], str]:
    """INSERT INTO model ... SELECT ... FROM `source`, its key returned as
    `written`; the field named `link` (attname) takes `source`.written, and
    with `key_in_json` (a JSON field's attname, a key) so does that key of the
    field's object. Returns the fields that take parameters, in order, and the
    text."""
    connection = connections[using]
    quote = connection.ops.quote_name
    meta = model._meta
    fields = [f for f in meta.concrete_fields if not f.primary_key]
    json_field, json_key = key_in_json or (None, None)
    if json_key is not None and not json_key.isidentifier():
        raise ValueError(f"{json_key!r} is not a plain JSON key")

    def value(field: models.Field) -> str:
        if field.attname == link:
            return f"{source}.written"
        if field.attname == json_field:
            return (
                f"jsonb_set(CAST(%s AS jsonb), '{{{json_key}}}', "
                f"to_jsonb({source}.written))"
            )
        return typed_placeholder(field, connection)

    values = [value(f) for f in fields]
    sql = (
        f"INSERT INTO {quote(meta.db_table)} "
        f"({', '.join(quote(f.column) for f in fields)}) "
        f"SELECT {', '.join(values)} FROM {source} "
        f"RETURNING {quote(meta.pk.column)} AS written"
    )
    return [f for f in fields if f.attname != link], sql


@functools.cache
def _insert_values(model: type[models.Model], using: str) -> tuple[list, str]:
    """INSERT INTO model ... VALUES ..., its key returned as `written`."""
    quote = connections[using].ops.quote_name
    meta = model._meta
    fields = [f for f in meta.concrete_fields if not f.primary_key]
    sql = (
        f"INSERT INTO {quote(meta.db_table)} "
        f"({', '.join(quote(f.column) for f in fields)}) "
        f"VALUES ({', '.join(['%s'] * len(fields))}) "
        f"RETURNING {quote(meta.pk.column)} AS written"
    )
    return fields, sql


def _prepared(fields: list[models.Field], obj: models.Model, connection) -> list:
    return [f.get_db_prep_save(f.pre_save(obj, True), connection) for f in fields]


def points_at(row: models.Model, field: models.Field, obj: models.Model) -> bool:
    """Whether `field` of `row` is a foreign key set to the object `obj`."""
    return (
        field.is_relation
        and field.is_cached(row)
        and field.get_cached_value(row) is obj
    )


@functools.cache
def _keys_to(model: type[models.Model], target: type[models.Model]) -> tuple:
    """The foreign keys of `model` that can point at a `target` (looked at
    for every row of every write: the model's other fields never can)."""
    return tuple(
        f
        for f in model._meta.concrete_fields
        if f.is_relation and issubclass(target, f.related_model)
    )


@functools.cache
def _attnames(model: type[models.Model]) -> frozenset[str]:
    return frozenset(f.attname for f in model._meta.concrete_fields)


def _link_to(row: models.Model, obj: models.Model) -> str | None:
    """The attname of the foreign key of `row` set to the object `obj`."""
    return next(
        (f.attname for f in _keys_to(type(row), type(obj)) if points_at(row, f, obj)),
        None,
    )


def _with_rows(
    first: tuple[str, str, list],
    rows: list[models.Model],
    using: str,
    parent: models.Model | None = None,
    key_in_json: tuple[str, str] | None = None,
) -> tuple | None:
    """Send `first` (its name, text and parameters) and an INSERT of each of
    `rows` after it, as one statement; a row's key to `parent` is first's
    `written`, and so is `key_in_json` of the rows that have that JSON field.
    Returns the keys written (first's, when it returns one, then the rows'),
    None when `first` changed nothing; the rows are saved then."""
    connection = connections[using]
    name, first_sql, params = first
    parts, names = [f"{name} AS ({first_sql})"], []
    params = list(params)
    for number, row in enumerate(rows):
        link = None if parent is None else _link_to(row, parent)
        in_json = (
            key_in_json
            if key_in_json is not None and key_in_json[0] in _attnames(type(row))
            else None
        )
        fields, sql = _insert_select(type(row), using, name, link, in_json)
        parts.append(f"r{number} AS ({sql})")
        names.append(f"r{number}")
        params += _prepared(fields, row, connection)
    if parent is not None:
        names.insert(0, name)
    sql = (
        f"WITH {', '.join(parts)} "
        f"SELECT {', '.join(f'{n}.written' for n in names)} "
        f"FROM {' CROSS JOIN '.join(names)}"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        result = cursor.fetchall()
    if not result:
        return None
    if len(result) > 1:
        raise FastPathInvariantError(
            f"the write of {name} with its rows matched {len(result)} rows"
        )
    written = result[0]
    for row, key in zip(rows, written[-len(rows) :], strict=True):
        row.pk = key
        row._state.adding = False
        row._state.db = using
    return written


def update_with_rows(
    update: tuple[str, list], rows: list[models.Model], using: str
) -> bool:
    """A one-row UPDATE (`update`: sql, params) and the INSERT of each of
    `rows` (its events, a job) in one statement; the rows are written only
    when the UPDATE matched. True when it did."""
    update_sql, params = update
    first = ("updated", f"{update_sql} RETURNING 1", params)
    return _with_rows(first, rows, using) is not None


def insert_with_rows(
    obj: models.Model,
    rows: list[models.Model],
    using: str,
    *,
    key_in_json: tuple[str, str] | None = None,
) -> None:
    """INSERT the new `obj` and each of `rows` in one statement; a foreign key
    of a row set to `obj` takes its new key, and so does `key_in_json` (a JSON
    field's attname and a key in it: an event's data naming the new row) of
    the rows that have that field. Sets the keys on all of them."""
    connection = connections[using]
    fields, sql = _insert_values(type(obj), using)
    first = ("created", sql, _prepared(fields, obj, connection))
    written = _with_rows(first, rows, using, parent=obj, key_in_json=key_in_json)
    if written is None:
        raise FastPathInvariantError(f"the INSERT of {obj!r} returned no key")
    obj.pk = written[0]
    obj._state.adding = False
    obj._state.db = using
    for row in rows:
        for field in _keys_to(type(row), type(obj)):
            if points_at(row, field, obj):
                setattr(row, field.attname, obj.pk)
        if key_in_json is not None and key_in_json[0] in _attnames(type(row)):
            getattr(row, key_in_json[0])[key_in_json[1]] = obj.pk


def insert_rows(rows: list[models.Model], using: str) -> None:
    """INSERT `rows` (of one or more models), one bulk INSERT per model: how
    the rows of a change are written where one statement is not available."""
    by_model: dict[type[models.Model], list[models.Model]] = {}
    for row in rows:
        by_model.setdefault(type(row), []).append(row)
    for model, objs in by_model.items():
        model._base_manager.db_manager(using).bulk_create(objs)
