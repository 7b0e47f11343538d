"""A hot lookup is a plain queryset method the store compiles
(codex.core.store.hot): on the whole table it runs compiled, once per shape;
on a queryset already narrowed it runs as plain Django, so the narrowing is
kept; keyword arguments are part of its shape."""

from __future__ import annotations

import pytest
from django.db.models.sql.compiler import SQLCompiler

from codex.repositories.models import Repository
from codex.tasks.models import Task
from tests.factories import make_task

pytestmark = pytest.mark.django_db


@pytest.fixture
def compiled(monkeypatch):
    seen: list = []
    original = SQLCompiler.as_sql

    def counting(self, *args, **kwargs):
        seen.append(self.query.model)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(SQLCompiler, "as_sql", counting)
    return seen


def test_on_the_whole_table_it_is_compiled_once(compiled):
    first, second = make_task(), make_task()
    Task.objects.with_repository(first.task_id)
    compiled.clear()
    assert Task.objects.with_repository(second.task_id) == second
    assert Task.objects.with_repository(first.task_id).repository == first.repository
    assert compiled == []


def test_a_narrowed_queryset_keeps_its_narrowing():
    task = make_task()
    other_repository = Repository.objects.create(url="file:///srv/other.git")
    elsewhere = Task.objects.filter(repository=other_repository)
    assert elsewhere.with_repository(task.task_id) is None
    assert Task.objects.filter(pk=task.pk).with_repository(task.task_id) == task


def test_keyword_arguments_shape_the_query(operator):
    from codex.accounts.models import ApiToken

    token, key = ApiToken.issue(operator, "ci")
    from django.contrib.auth.models import Group

    Group.objects.create(name="team").user_set.add(operator)
    plain = ApiToken.objects.authenticate(key)
    assert plain == token and plain.user_role_groups == frozenset()
    with_team = ApiToken.objects.authenticate(key, ["team", "integrator"])
    assert with_team.user_role_groups == frozenset({"team"})
    assert ApiToken.objects.authenticate("not-a-key", ["team"]) is None


def test_an_aggregate_is_nones_over_no_rows_and_the_sums_over_some():
    from codex.fleet.models import AgentRun

    task = make_task()
    assert AgentRun.objects.spend_sums_of(task.pk)[0] is None
    assert AgentRun.spend_of_task(task.pk).cost_usd == 0
