"""codex.core.store.compiled_query.first_row: a hot lookup compiled once per
process, run with each call's values in its slots."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.models.sql.compiler import SQLCompiler
from django.test.utils import CaptureQueriesContext

from codex.core.store import compiled_query
from codex.core.store.compiled_query import CompiledQuery, all_rows, first_row
from codex.fleet.models import AgentInstance
from codex.tasks.models import Task
from tests.factories import make_repository, make_task

pytestmark = pytest.mark.django_db


def by_title_and_repository(title, repository_id):
    return Task.objects.filter(title=title, repository_id=repository_id).order_by(
        "-created_at"
    )[:1]


def test_each_call_runs_with_its_own_values():
    one, two = make_repository(), make_repository()
    a = make_task(one, title="Same title")
    b = make_task(two, title="Same title")
    make_task(one, title="Other")

    name = "test-task-by-title-and-repository"
    assert first_row(Task, name, by_title_and_repository, "Same title", one.pk) == a
    assert first_row(Task, name, by_title_and_repository, "Same title", two.pk) == b
    assert first_row(Task, name, by_title_and_repository, "Nothing", one.pk) is None


def test_it_is_compiled_once_and_runs_one_statement(monkeypatch):
    task = make_task(title="Once")
    built = []

    def build(title, repository_id):
        built.append((title, repository_id))
        return by_title_and_repository(title, repository_id)

    monkeypatch.setattr(compiled_query, "_CACHE", {})
    for _ in range(3):
        with CaptureQueriesContext(connection) as captured:
            found = first_row(Task, "test-once", build, "Once", task.repository_id)
        assert found == task
        assert len(captured.captured_queries) == 1
    assert len(built) == 1
    # Built with stand-ins, never with a caller's values.
    assert built[0][0] != "Once" and built[0][1] != task.repository_id


def test_it_reads_what_the_orm_reads():
    task = make_task(title="Loaded")
    found = first_row(
        Task,
        "test-with-repository",
        lambda task_id: (
            Task.objects.select_related("repository")
            .filter(task_id=task_id)
            .order_by()[:1]
        ),
        task.task_id,
    )
    expected = Task.objects.select_related("repository").get(pk=task.pk)
    names = [f.attname for f in Task._meta.concrete_fields]
    assert [getattr(found, n) for n in names] == [getattr(expected, n) for n in names]
    with CaptureQueriesContext(connection) as captured:
        assert found.repository == task.repository  # populated, not fetched
    assert captured.captured_queries == []
    assert found._state.adding is False and found._state.db == "default"


def test_its_converters_are_worked_out_once_and_applied_at_every_run(monkeypatch):
    task = make_task(title="Converted")
    task.phase_progress = {"intake": {"status": "done"}}
    task.save()
    monkeypatch.setattr(compiled_query, "_CACHE", {})
    name, build = (
        "test-converted",
        lambda task_id: Task.objects.filter(task_id=task_id).order_by()[:1],
    )
    first_row(Task, name, build, task.task_id)
    created_at = Task.objects.get(pk=task.pk).created_at

    def worked_out_again(self, expressions):
        raise AssertionError("the converters are worked out at every run")

    monkeypatch.setattr(SQLCompiler, "get_converters", worked_out_again)
    found = first_row(Task, name, build, task.task_id)
    # A JSON column is parsed and a time is an aware datetime (SQLite keeps
    # text) by the converters the compiled query holds.
    assert found.phase_progress == {"intake": {"status": "done"}}
    assert found.created_at == created_at
    assert found.created_at.tzinfo is not None


@pytest.mark.parametrize("value", [None, True, 1.5, b"bytes"])
def test_a_value_that_has_no_slot_is_refused(value):
    with pytest.raises(TypeError):
        first_row(
            AgentInstance,
            "test-refused",
            lambda x: AgentInstance.objects.filter(role=x)[:1],
            value,
        )


def test_a_slot_the_query_does_not_hold_exactly_once_is_refused():
    queryset = Task.objects.filter(title="x", description="x")
    with pytest.raises(ValueError, match="exactly one parameter"):
        CompiledQuery(queryset, "x")
    with pytest.raises(ValueError, match="exactly one parameter"):
        CompiledQuery(Task.objects.filter(title="x"), "y")


def test_the_number_of_values_must_match_the_slots():
    query = CompiledQuery(
        Task.objects.filter(title="<a>", description="<b>"), "<a>", "<b>"
    )
    with pytest.raises(TypeError):
        query.first("only one")


def test_all_rows_runs_the_whole_list_in_its_order():
    one, two = make_repository(), make_repository()
    a = make_task(one, title="B")
    b = make_task(one, title="A")
    make_task(two, title="C")

    def by_repository(repository_id):
        return Task.objects.filter(repository_id=repository_id).order_by("title")

    name = "test-tasks-by-repository"
    assert all_rows(Task, name, by_repository, one.pk) == [b, a]
    assert [t.title for t in all_rows(Task, name, by_repository, two.pk)] == ["C"]
    assert all_rows(Task, name, by_repository, 0) == []
    with pytest.raises(TypeError):
        all_rows(Task, name, by_repository, None)
