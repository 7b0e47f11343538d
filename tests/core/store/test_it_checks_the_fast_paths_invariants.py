"""The fast path's invariants raise FastPathInvariantError (not a bare
assert, which `python -O` removes), and the save hands the fast path its
write explicitly: nothing is left on the object between saves
(docs/architecture.md#fast-path)."""

from __future__ import annotations

import pytest
from django.db import models
from django.utils import timezone

from codex.core.store import compiled_query as compiled
from codex.core.store import event_rows, statements
from codex.core.store.django_internals import FastPathInvariantError
from codex.core.store.refusals import VersionConflict
from codex.core.store.versioned import VersionedLeasedModel
from codex.events.models import Event, EventKind
from codex.fleet.models import AgentRun
from codex.tasks.models import Task
from tests.factories import make_task, put_in_state

pytestmark = pytest.mark.django_db(transaction=True)


def in_progress() -> Task:
    return put_in_state(make_task(), status="in_progress", phase="planning")


def update_of(task: Task, write: statements.VersionedWrite, values: list) -> bool:
    return statements.update_versioned_row(
        task,
        write,
        base_qs=Task._base_manager.all(),
        using="default",
        pk_val=task.pk,
        values=values,
        now=timezone.now(),
    )


def test_a_write_that_does_not_raise_the_version_by_one_is_refused():
    task = in_progress()
    version = Task._meta.get_field("version")
    write = statements.VersionedWrite(expected_version=task.version)
    with pytest.raises(FastPathInvariantError, match="writes version"):
        update_of(task, write, [(version, None, task.version + 2)])
    title = Task._meta.get_field("title")
    with pytest.raises(FastPathInvariantError, match="does not write its version"):
        update_of(task, write, [(title, None, "x")])
    assert Task.objects.get(pk=task.pk).version == task.version


def test_a_write_without_the_version_read_is_refused():
    task = in_progress()
    with pytest.raises(FastPathInvariantError, match="without a version"):
        update_of(task, statements.VersionedWrite(), [])


def test_a_write_by_key_matching_several_rows_is_refused():
    assert statements.one_row(1, object()) and not statements.one_row(0, object())
    with pytest.raises(FastPathInvariantError, match="matched 2 rows"):
        statements.one_row(2, object())


def test_a_save_that_never_reaches_do_update_is_refused(monkeypatch):
    task = in_progress()
    version = task.version

    def plain_update(self, base_qs, using, pk_val, values, update_fields, forced):
        return base_qs.filter(pk=pk_val)._update(values) > 0

    # As if Django stopped calling the hook: the version would go unchecked.
    monkeypatch.setattr(VersionedLeasedModel, "_do_update", plain_update)
    with pytest.raises(FastPathInvariantError, match="never called _do_update"):
        task.perform("pause", by="user:alice")
    assert task.version == version  # the save put back what it raised


def test_a_save_inside_its_own_save_is_refused():
    task = in_progress()
    with task.writing() as write:
        write.expected_version = task.version
        with pytest.raises(FastPathInvariantError, match="inside its own save"):
            task.perform("pause", by="user:alice")


def test_nothing_of_a_save_is_left_on_the_object():
    task = in_progress()
    task.perform("pause", by="user:alice")
    assert task._versioned_write is None
    stale = Task.objects.get(pk=task.pk)
    task.perform("resume", by="user:alice")
    with pytest.raises(VersionConflict):
        stale.perform("cancel", by="user:bob")
    assert stale._versioned_write is None
    assert "_versioned_write" not in stale.__dict__


@pytest.mark.parametrize(
    ("sql", "klass_info", "refused"),
    [
        ("UPDATE tasks_task SET ...", {}, "not a SELECT"),
        ("SELECT 1", None, "klass_info"),
        ("SELECT 1", {"model": Event, "select_fields": [0]}, "selects"),
        ("SELECT 1", {"model": Task, "select_fields": [0, 2]}, "one run"),
    ],
)
def test_a_compiled_query_of_another_shape_is_refused(sql, klass_info, refused):
    queryset = Task.objects.filter(title="x")
    compiled.check_compiled_shape(
        "SELECT 1", {"model": Task, "select_fields": [0]}, queryset
    )
    with pytest.raises(FastPathInvariantError, match=refused):
        compiled.check_compiled_shape(sql, klass_info, queryset)


def test_a_logged_change_writes_its_event_through_the_registered_event_log(
    monkeypatch,
):
    made = []

    def factory(**fields) -> models.Model:
        made.append(fields["kind"])
        return Event(**fields)

    monkeypatch.setattr(event_rows, "_factory", factory)
    run = AgentRun.objects.begin(by="worker:1", task=in_progress())
    run.perform("succeed", by="worker:1")
    assert made == [EventKind.RUN, EventKind.RUN]
    targets = Event.objects.filter(subject=run.event_subject).values_list(
        "target", flat=True
    )
    assert list(targets) == ["running", "succeeded"]
