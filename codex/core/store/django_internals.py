"""The Django (and psycopg) internals the fast path relies on, the versions they
were verified on, and the system check that refuses to start without them
(docs/architecture.md#fast-path).

Two modules use private APIs, for speed, and nothing else should:
codex.core.store.statements (the one-statement versioned writes, reached through
VersionedLeasedModel._do_update) and codex.core.store.compiled_query (the hot
lookups compiled once). Each internal below names what relies on it. On a
Django upgrade, tests/core/store/test_it_fails_loudly_when_django_internals_change.py
fails naming the internal to re-check; move VERIFIED_DJANGO once it passes.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass

import django
from django.core import checks

# Django versions the fast path was verified on: from (inclusive), to (exclusive).
VERIFIED_DJANGO = ((5, 2), (5, 3))

WRITES = "codex.core.store.statements (and VersionedLeasedModel._do_update)"
READS = "codex.core.store.compiled_query"


class FastPathInvariantError(RuntimeError):
    """An invariant of the fast path failed (a write matched several rows, a
    save never reached `_do_update`, a compiled query has another shape).
    Most likely a Django or psycopg upgrade changed an internal listed in
    codex.core.store.django_internals; never caught, so it stops the write."""


@dataclass(frozen=True)
class Internal:
    """One private API the fast path uses: `probe()` returns None while it is
    as verified, else what changed."""

    name: str
    used_by: str
    probe: Callable[[], str | None]
    # A missing internal breaks correctness (error) or only speed (warning).
    breaks_correctness: bool = True


def parameters(function: Callable) -> tuple[str, ...]:
    """The parameter names of `function`, in order."""
    return tuple(inspect.signature(function).parameters)


def _expect_parameters(function: Callable, expected: tuple[str, ...]) -> str | None:
    found = parameters(function)
    if found != expected:
        return f"parameters are {found}, verified with {expected}"
    return None


def _do_update_signature() -> str | None:
    from django.db.models import Model

    return _expect_parameters(
        Model._do_update,
        (
            "self",
            "base_qs",
            "using",
            "pk_val",
            "values",
            "update_fields",
            "forced_update",
        ),
    )


def _save_table_calls_do_update() -> str | None:
    from django.db.models import Model

    if "_do_update" not in Model._save_table.__code__.co_names:
        return "Model._save_table no longer calls _do_update"
    return None


def _queryset_update() -> str | None:
    from django.db.models import QuerySet

    return _expect_parameters(QuerySet._update, ("self", "values"))


def _query_where() -> str | None:
    from django.db.models.sql import Query

    if not hasattr(Query(None), "where"):
        return "Query has no `where`"
    return None


def _compiler_attributes() -> str | None:
    from django.contrib.auth.models import Group
    from django.db import DEFAULT_DB_ALIAS

    compiler = Group.objects.all().query.get_compiler(using=DEFAULT_DB_ALIAS)
    compiler.as_sql()  # sets up the select (no query is sent)
    missing = [
        name
        for name in (
            "select",
            "col_count",
            "klass_info",
            "annotation_col_map",
            "has_composite_fields",
        )
        if not hasattr(compiler, name)
    ]
    if missing:
        return f"SQLCompiler has no {', '.join(missing)}"
    return _expect_parameters(
        compiler.get_converters, ("expressions",)
    ) or _expect_parameters(compiler.apply_converters, ("rows", "converters"))


def _related_populators() -> str | None:
    from django.db.models import query

    function = getattr(query, "get_related_populators", None)
    if function is None:
        return "django.db.models.query has no get_related_populators"
    return _expect_parameters(function, ("klass_info", "select", "db"))


def _field_methods() -> str | None:
    from django.db.models import Field, ForeignKey

    for function, expected in (
        (Field.get_db_prep_save, ("self", "value", "connection")),
        (Field.pre_save, ("self", "model_instance", "add")),
        (Field.cast_db_type, ("self", "connection")),
        (ForeignKey.is_cached, ("self", "instance")),
        (ForeignKey.get_cached_value, ("self", "instance", "default")),
    ):
        changed = _expect_parameters(function, expected)
        if changed:
            return f"{function.__qualname__}: {changed}"
    return None


def _atomic_block_flag() -> str | None:
    from django.db import DEFAULT_DB_ALIAS, connections

    if not hasattr(connections[DEFAULT_DB_ALIAS], "in_atomic_block"):
        return "the database connection has no in_atomic_block"
    return None


def _psycopg_statement_cache() -> str | None:
    try:
        from psycopg import _queries
    except ImportError:  # an SQLite-only install: nothing to keep parsed
        return None
    if not hasattr(_queries, "MAX_CACHED_STATEMENT_PARAMS"):
        return "psycopg._queries has no MAX_CACHED_STATEMENT_PARAMS"
    return None


INTERNALS = (
    Internal("django.db.models.Model._do_update", WRITES, _do_update_signature),
    Internal(
        "django.db.models.Model._save_table calls _do_update",
        WRITES,
        _save_table_calls_do_update,
    ),
    Internal("django.db.models.QuerySet._update", WRITES, _queryset_update),
    Internal("django.db.models.sql.Query.where", WRITES, _query_where),
    Internal("django.db.models.Field save and cache methods", WRITES, _field_methods),
    Internal(
        "connection.in_atomic_block",
        f"{WRITES}, codex.core.store.versioned.save_with_rows",
        _atomic_block_flag,
    ),
    Internal(
        "SQLCompiler.select, col_count, klass_info, annotation_col_map, "
        "get_converters, apply_converters",
        READS,
        _compiler_attributes,
    ),
    Internal(
        "django.db.models.query.get_related_populators", READS, _related_populators
    ),
    Internal(
        "psycopg._queries.MAX_CACHED_STATEMENT_PARAMS",
        "codex.core.store.statements (keeps a task creation's statement parsed)",
        _psycopg_statement_cache,
        breaks_correctness=False,
    ),
)


def changed_internals() -> list[tuple[Internal, str]]:
    """Each internal that is not as verified, with what changed."""
    found = []
    for internal in INTERNALS:
        try:
            changed = internal.probe()
        except Exception as exc:  # a probe that cannot even run: changed too
            changed = f"{type(exc).__name__}: {exc}"
        if changed:
            found.append((internal, changed))
    return found


def django_is_verified(version: tuple[int, ...] = django.VERSION[:2]) -> bool:
    """Whether `version` (major, minor) is in VERIFIED_DJANGO."""
    low, high = VERIFIED_DJANGO
    return low <= tuple(version) < high


def check_django_internals(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    """System check: an error per internal the writes need that changed (the
    versioned saves would be wrong, so Codex refuses to start), a warning per
    one that only costs speed and for a Django outside VERIFIED_DJANGO."""
    messages: list[checks.CheckMessage] = []
    for internal, changed in changed_internals():
        level = checks.Error if internal.breaks_correctness else checks.Warning
        messages.append(
            level(
                f"Django internal changed: {internal.name} ({changed})",
                hint=f"Re-check {internal.used_by}; see docs/architecture.md"
                "#fast-path.",
                id="codex.E001" if internal.breaks_correctness else "codex.W002",
            )
        )
    if not django_is_verified():
        low, high = VERIFIED_DJANGO
        messages.append(
            checks.Warning(
                f"Django {django.get_version()} is outside the versions the fast "
                f"path was verified on ({low} to before {high})",
                hint=f"Run tests/core/store/test_it_fails_loudly_when_django_internals"
                f"_change.py and re-check {WRITES} and {READS}.",
                id="codex.W001",
            )
        )
    return messages


def check_event_log_registered(app_configs=None, **kwargs) -> list[checks.Error]:
    """System check: logged state changes need the event log's row factory
    (registered by codex.events on start)."""
    from codex.core.store.event_rows import event_row_factory_registered

    if event_row_factory_registered():
        return []
    return [
        checks.Error(
            "No event log is registered: logged state changes cannot write events",
            hint="Add codex.events to INSTALLED_APPS (EventsConfig.ready "
            "registers it).",
            id="codex.E002",
        )
    ]
