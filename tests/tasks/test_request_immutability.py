"""Spec 002 §2.1: the request block is "immutable after creation"; identity too.

Three layers refuse a change: Task.save (ImmutableFieldError), the queryset's
update() (LeaseRequired) and, on PostgreSQL, a BEFORE UPDATE trigger.
"""

from __future__ import annotations

import importlib

import pytest
from django.db import IntegrityError, InternalError, connection, transaction

from codex.core.store.refusals import LeaseRequired
from codex.tasks.models import ImmutableFieldError, Task
from tests.factories import make_repository, make_task

pytestmark = pytest.mark.django_db

CHANGES = {
    "title": "Something else entirely",
    "description": "rewritten",
    "priority": "low",
    "acceptance_criteria": "- nothing",
    "task_id": "FEAT-20200101-abcdef",
    "created_by": "manual",
}


def row(task: Task) -> dict:
    return Task.objects.filter(pk=task.pk).values(*CHANGES, "version").get()


@pytest.mark.parametrize(("field", "value"), list(CHANGES.items()))
def test_saving_a_changed_request_field_raises(field, value):
    task = make_task()
    before = row(task)
    setattr(task, field, value)

    with pytest.raises(ImmutableFieldError) as error:
        task.save()

    assert field in str(error.value)
    assert row(task) == before


def test_changing_the_repository_is_refused():
    task = make_task()
    task.repository = make_repository()
    with pytest.raises(ImmutableFieldError):
        task.save()


def test_saving_unchanged_request_with_other_fields_works():
    task = make_task()
    task.branch = "feat/login"
    task.save()
    assert Task.objects.get(pk=task.pk).branch == "feat/login"


@pytest.mark.parametrize(
    "values",
    [
        {"title": "bulk rename"},
        {"description": "bulk"},
        {"priority": "low"},
        {"status": "completed"},
        {"phase": "release"},
        {"version": 99},
    ],
    ids=lambda values: next(iter(values)),
)
def test_bulk_update_of_protected_fields_raises(values):
    task = make_task()
    before = Task.objects.filter(pk=task.pk).values().get()

    with pytest.raises(LeaseRequired):
        Task.objects.filter(pk=task.pk).update(**values)

    assert Task.objects.filter(pk=task.pk).values().get() == before


def test_bulk_update_of_unprotected_fields_bumps_the_version():
    task = make_task()
    Task.objects.filter(pk=task.pk).update(branch="feat/x")
    assert Task.objects.get(pk=task.pk).version == task.version + 1


def test_bulk_update_objects_of_protected_fields_raises():
    task = make_task()
    with pytest.raises(LeaseRequired):
        Task.objects.bulk_update([task], ["title"])


@pytest.mark.postgresql
@pytest.mark.parametrize(
    ("column", "value"),
    [
        ("title", "'raw rename'"),
        ("description", "'raw'"),
        ("priority", "'low'"),
        ("acceptance_criteria", "''"),
        ("task_id", "'FEAT-20200101-zzzzzz'"),
        ("created_by", "'manual'"),
    ],
)
def test_raw_sql_update_is_refused_by_the_trigger(column, value):
    task = make_task()
    before = row(task)

    with pytest.raises((IntegrityError, InternalError)), transaction.atomic():  # noqa: SIM117
        with connection.cursor() as cursor:
            cursor.execute(
                f"UPDATE tasks_task SET {column} = {value} WHERE id = %s", [task.pk]
            )

    assert row(task) == before


@pytest.mark.postgresql
def test_raw_sql_update_of_other_columns_is_allowed():
    task = make_task()
    with connection.cursor() as cursor:
        cursor.execute("UPDATE tasks_task SET branch = 'raw' WHERE id = %s", [task.pk])
    assert Task.objects.get(pk=task.pk).branch == "raw"


class _RecordingEditor:
    """Stands in for PostgreSQL's schema editor and records execute() calls."""

    class connection:  # noqa: N801
        vendor = "postgresql"

    def __init__(self) -> None:
        self.calls: list[tuple[str, object]] = []

    def execute(self, sql, params=()):
        self.calls.append((sql, params))


def test_trigger_migration_sql_is_safe_for_client_side_parameters():
    """Django's PostgreSQL schema editor composes SQL client-side unless
    params=None: a bare '%' must then be doubled."""
    migration = importlib.import_module(
        "codex.tasks.migrations.0002_request_immutable_trigger"
    )
    editor = _RecordingEditor()
    migration.create(None, editor)
    migration.drop(None, editor)

    assert editor.calls
    for sql, params in editor.calls:
        assert params is None or "%" not in sql.replace("%%", ""), sql
