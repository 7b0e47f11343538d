"""VersionedModel.refresh_from_db() reads the whole row through a query
compiled once per model, and leaves the instance as Django's own
refresh_from_db(fields=None) would."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.models.sql.compiler import SQLCompiler
from django.test.utils import CaptureQueriesContext

from codex.fleet.models import AgentInstance, AgentRun
from codex.tasks.models import Task
from tests.factories import make_task, put_in_state

pytestmark = pytest.mark.django_db


def test_it_reads_what_someone_else_wrote_in_one_statement():
    task = make_task()
    Task._base_manager.filter(pk=task.pk).update(branch="codex/after", version=9)
    with CaptureQueriesContext(connection) as captured:
        task.refresh_from_db()
    assert (task.branch, task.version) == ("codex/after", 9)
    assert len(captured.captured_queries) == 1
    assert captured.captured_queries[0]["sql"].lstrip().upper().startswith("SELECT")


def test_it_compiles_no_sql_to_refresh_again(monkeypatch):
    task = make_task()
    run = AgentRun.objects.begin(by="worker:test", task=task, session_id="s-3")
    task.refresh_from_db()
    run.refresh_from_db()  # each model's refresh is compiled once
    compiled = []
    original = SQLCompiler.as_sql

    def counting(self, *args, **kwargs):
        compiled.append(self.query.model)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(SQLCompiler, "as_sql", counting)
    task.refresh_from_db()
    run.refresh_from_db()
    assert compiled == []
    task.refresh_from_db(fields=["title"])  # a partial one is Django's
    assert compiled == [Task]


def test_a_state_field_changed_elsewhere_is_read_too():
    # django-fsm protects the status field: set once per instance.
    task = make_task()
    put_in_state(Task.objects.get(pk=task.pk), status="in_progress")
    task.refresh_from_db()
    assert task.status == "in_progress"
    task.refresh_from_db()  # and again
    assert task.status == "in_progress"


def test_a_changed_foreign_key_drops_the_cached_object():
    run = AgentRun.objects.begin(by="worker:test", task=make_task(), session_id="s-4")
    assert run.task is not None  # cached
    other = make_task()
    AgentRun._base_manager.filter(pk=run.pk).update(task=other)
    run.refresh_from_db()
    assert run.task_id == other.pk
    assert run.task == other


def test_cached_reverse_relations_are_dropped():
    task = make_task()
    run = AgentRun.objects.begin(by="worker:test", task=task, session_id="s-1")
    instance = AgentInstance.objects.start(
        type="planning",
        repository=task.repository,
        task=task,
        role="analyst",
        worktree_path="/wt",
        branch_name="codex/x",
        by="test",
    )
    AgentRun.objects.filter(pk=run.pk).update(instance=instance)
    assert list(instance.runs.all()) == [run]
    prefetched = AgentInstance.objects.prefetch_related("runs").get(pk=instance.pk)
    AgentRun.objects.filter(pk=run.pk).update(instance=None)
    prefetched.refresh_from_db()
    assert list(prefetched.runs.all()) == []


def test_the_unsaved_changes_are_no_longer_counted_as_changes():
    task = make_task(title="Stored")
    task.title = "Unsaved"
    task.refresh_from_db()
    assert task.title == "Stored"
    assert task.fields_to_write() is not None
    assert "title" not in task.fields_to_write()


def test_a_deleted_row_raises_does_not_exist():
    task = make_task()
    run = AgentRun.objects.begin(by="worker:test", task=task, session_id="s-2")
    # Nothing refers to the run: removed without the ORM's collector.
    AgentRun._base_manager.filter(pk=run.pk)._raw_delete(AgentRun.objects.db)
    with pytest.raises(AgentRun.DoesNotExist):
        run.refresh_from_db()


def test_deferred_and_partial_refreshes_keep_djangos_way():
    task = make_task()
    put_in_state(task, branch="codex/stored", pr_url="https://x/pull/1")
    Task._base_manager.filter(pk=task.pk).update(
        branch="codex/new", pr_url="https://x/pull/2"
    )
    deferred = Task.objects.only("id", "branch", "version").get(pk=task.pk)
    deferred.refresh_from_db()
    assert (deferred.branch, deferred.pr_url) == ("codex/new", "https://x/pull/2")

    task.refresh_from_db(fields=["branch"])
    assert (task.branch, task.pr_url) == ("codex/new", "https://x/pull/1")
