"""The fast path (codex.core.store.statements, codex.core.store.compiled_query) uses
Django internals; each is pinned here, so that a Django upgrade that changes
one fails this module with the internal's name and the module to re-check,
not somewhere deep in a write (docs/architecture.md#fast-path). The system
check refuses to start on such a Django, naming the internal too."""

from __future__ import annotations

import django
import pytest
from django.core.management import call_command
from django.core.management.base import SystemCheckError
from django.db import connection, models
from django.db.models.query import get_related_populators

from codex.accounts.models import ApiToken
from codex.core.store import django_internals, event_rows, statements
from codex.core.store.compiled_query import CompiledQuery
from codex.core.store.django_internals import (
    INTERNALS,
    READS,
    VERIFIED_DJANGO,
    WRITES,
    check_django_internals,
    check_event_log_registered,
)
from codex.tasks.models import Task
from tests.factories import make_task, make_user, put_in_state

RECHECK = "docs/architecture.md#fast-path"


def test_django_is_a_version_the_fast_path_was_verified_on():
    low, high = VERIFIED_DJANGO
    assert django_internals.django_is_verified(), (
        f"Django {django.get_version()} is outside {low}..{high} (exclusive): "
        f"re-check {WRITES} and {READS} against it ({RECHECK}), then move "
        "VERIFIED_DJANGO in codex.core.store.django_internals"
    )


@pytest.mark.parametrize("internal", INTERNALS, ids=lambda i: i.name)
def test_each_internal_is_as_verified(internal):
    changed = internal.probe()
    assert changed is None, (
        f"Django internal changed: {internal.name} ({changed}); re-check "
        f"{internal.used_by} ({RECHECK})"
    )


# What the probes cannot see without a database: the internals' behaviour.


@pytest.mark.django_db
def test_a_versioned_save_reaches_the_fast_path_with_djangos_update_triples(
    monkeypatch,
):
    task = put_in_state(make_task(), status="in_progress", phase="planning")
    seen = {}
    real = statements.update_versioned_row

    def spy(obj, write, **arguments):
        seen.update(arguments, obj=obj, expected=write.expected_version)
        return real(obj, write, **arguments)

    monkeypatch.setattr(statements, "update_versioned_row", spy)
    task.perform("pause", by="user:alice")
    assert seen["obj"] is task, (
        f"Model.save() no longer calls _do_update: re-check {WRITES}"
    )
    assert not seen["base_qs"].query.where, (
        "Model._save_table hands _do_update a filtered base_qs: the one-statement "
        f"UPDATE would drop its filter; re-check {WRITES}"
    )
    assert seen["pk_val"] == task.pk
    triples = seen["values"]
    assert all(
        len(triple) == 3 and isinstance(triple[0], models.Field) for triple in triples
    ), f"_do_update's values are no longer (field, model, value): re-check {WRITES}"
    versions = [value for field, _, value in triples if field.attname == "version"]
    assert versions == [seen["expected"] + 1]


@pytest.mark.django_db
def test_queryset_update_takes_the_triples_and_counts_the_rows_matched():
    task = make_task()
    version = Task._meta.get_field("version")
    queryset = Task._base_manager.filter(pk=task.pk)
    assert queryset.query.where, f"a filtered Query has no where: re-check {WRITES}"
    assert not Task._base_manager.all().query.where
    assert queryset._update([(version, None, task.version)]) == 1, (
        f"QuerySet._update no longer returns the rows matched: re-check {WRITES}"
    )
    assert Task._base_manager.filter(pk=-1)._update([(version, None, 1)]) == 0


@pytest.mark.django_db
def test_the_compiler_describes_a_select_related_query_as_compiled_query_reads_it():
    user = make_user(role="team")
    _, key = ApiToken.issue(user, "ci")
    queryset = ApiToken.objects.select_related("user").filter(user=user)
    compiler = queryset.query.get_compiler(using=queryset.db)
    compiler.as_sql()
    info = compiler.klass_info
    assert info["model"] is ApiToken, f"klass_info changed: re-check {READS}"
    assert [related["model"] for related in info["related_klass_infos"]] == [type(user)]
    populators = get_related_populators(info, compiler.select, queryset.db)
    assert [type(p).__name__ for p in populators] == ["RelatedPopulator"]
    found = CompiledQuery(queryset.filter(pk=0), 0)
    assert found.first(ApiToken.objects.get(user=user).pk).user == user


@pytest.mark.django_db
def test_the_psycopg_statement_cache_keeps_the_long_writes():
    if connection.vendor != "postgresql":
        pytest.skip("the bound is psycopg's")
    from psycopg import _queries

    assert _queries.MAX_CACHED_STATEMENT_PARAMS >= statements.STATEMENT_PARAMS_CACHED


# The system check: Codex refuses to start without them.


def test_the_check_passes_on_this_django():
    assert check_django_internals() == []
    assert check_event_log_registered() == []


def test_the_check_refuses_to_start_when_do_update_changes(monkeypatch):
    def _do_update(self, base_qs, using, pk_val, values, update_fields, forced, more):
        raise AssertionError("never called")

    monkeypatch.setattr(models.Model, "_do_update", _do_update)
    [error] = check_django_internals()
    assert error.id == "codex.E001" and error.is_serious()
    assert "Model._do_update" in error.msg
    assert "codex.core.store.statements" in error.hint and RECHECK in error.hint
    with pytest.raises(SystemCheckError, match="Model._do_update"):
        call_command("check")


def test_the_check_names_a_missing_compiler_function(monkeypatch):
    from django.db.models import query

    monkeypatch.delattr(query, "get_related_populators")
    [error] = check_django_internals()
    assert "get_related_populators" in error.msg
    assert READS in error.hint


def test_the_check_only_warns_for_what_costs_speed_or_an_unverified_version(
    monkeypatch,
):
    pytest.importorskip("psycopg")
    from psycopg import _queries

    monkeypatch.delattr(_queries, "MAX_CACHED_STATEMENT_PARAMS")
    monkeypatch.setattr(django_internals, "VERIFIED_DJANGO", ((4, 2), (5, 0)))
    messages = check_django_internals()
    assert sorted(m.id for m in messages) == ["codex.W001", "codex.W002"]
    assert not any(m.is_serious() for m in messages)


def test_the_check_refuses_to_start_without_an_event_log(monkeypatch):
    monkeypatch.setattr(event_rows, "_factory", None)
    [error] = check_event_log_registered()
    assert error.id == "codex.E002" and "codex.events" in error.hint
