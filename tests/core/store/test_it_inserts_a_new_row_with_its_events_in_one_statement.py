"""A new agent run or agent instance goes in with its events as one
statement on PostgreSQL (codex.core.store.logged_state, `event_id_key`): the
events' data names the new row's id, taken in the statement itself. Every
event names the row it is about, on either database, and a row refused by
the database leaves no event behind."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, connection
from django.test.utils import CaptureQueriesContext

from codex.events.models import Event
from codex.fleet.models import AgentInstance, AgentRun
from codex.fleet.models.choices import InstanceType
from codex.tasks.models import Task
from tests.factories import make_task

pytestmark = pytest.mark.django_db


def begin_run(task, session_id: str) -> AgentRun:
    return AgentRun.objects.begin(by="worker:test", session_id=session_id, task=task)


def start_planner(task) -> AgentInstance:
    return AgentInstance.objects.start(
        type=InstanceType.PLANNING,
        repository=task.repository,
        task=task,
        worktree_path="/wt/x",
        branch_name="codex/x",
        by="worker:test",
    )


def test_a_runs_and_an_instances_events_name_the_new_row():
    task = make_task()
    run = begin_run(task, "s-events-1")
    instance = start_planner(task)

    [run_event] = Event.objects.filter(subject=f"run:{run.session_id}")
    [instance_event] = Event.objects.filter(subject=f"instance:{instance.instance_id}")
    assert run_event.data["run"] == run.pk and run_event.task_id == task.pk
    assert instance_event.data["instance"] == instance.pk
    assert instance_event.data["repository"] == task.repository_id
    # The objects in memory are the rows as stored: a later save updates them.
    assert run._state.adding is False and instance._state.adding is False
    run.perform("succeed", by="worker:test", reason="done")
    assert AgentRun.objects.get(pk=run.pk).status == "succeeded"


@pytest.mark.postgresql
@pytest.mark.django_db(transaction=True)  # as a worker's step: no transaction open
def test_a_new_run_and_its_event_are_one_statement():
    task = make_task()
    with CaptureQueriesContext(connection) as queries:
        begin_run(task, "s-one-statement")
    assert len(queries) == 1, [q["sql"][:80] for q in queries]
    with CaptureQueriesContext(connection) as queries:
        start_planner(task)
    # The next free agent number, then the row with its event.
    assert len(queries) == 2, [q["sql"][:80] for q in queries]


@pytest.mark.django_db(transaction=True)
def test_a_refused_row_leaves_no_event():
    task = make_task()
    begin_run(task, "s-taken")
    events = Event.objects.count()
    with pytest.raises(IntegrityError):
        begin_run(task, "s-taken")  # session ids are unique
    assert Event.objects.count() == events
    assert AgentRun.objects.filter(session_id="s-taken").count() == 1


@pytest.mark.django_db(transaction=True)  # the refusal ends a caller's transaction
def test_a_run_of_an_unsaved_task_is_refused_as_django_refuses_it():
    events = Event.objects.count()
    with pytest.raises(ValueError, match="unsaved related object"):
        begin_run(Task(title="unsaved"), "s-unsaved")
    assert Event.objects.count() == events


def test_a_run_given_its_id_keeps_it():
    task = make_task()
    run = AgentRun(session_id="s-own-id", task=task, pk=777_001)
    run.record(by="worker:test", reason="run started")
    run.save()
    assert AgentRun.objects.get(session_id="s-own-id").pk == 777_001
    [event] = Event.objects.filter(subject="run:s-own-id")
    assert event.data["run"] == 777_001
