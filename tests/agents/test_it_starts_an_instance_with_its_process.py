"""A step's bookkeeping (agents.instances.begin_phase_instance): a new
instance carries its process in its INSERT, a reused one is stamped with one
UPDATE, and the step's run is the one advance_task named (running_step), not
looked up again."""

from __future__ import annotations

import os
import socket

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agents.instances import begin_phase_instance, running_run
from codex.fleet.models import AgentInstance, AgentRun, running_step
from tests.factories import make_task, put_in_state

pytestmark = pytest.mark.django_db


def begin(task):
    return begin_phase_instance(task, worktree="/wt/x", branch="codex/x")


def statements(captured, verb: str, table: str) -> list[str]:
    return [
        q["sql"]
        for q in captured.captured_queries
        if q["sql"].lstrip().upper().startswith(verb) and f'"{table}"' in q["sql"]
    ]


@pytest.fixture
def task():
    task = make_task(issue_number=7)
    put_in_state(task, status="in_progress", phase="implementation")
    return task


def test_a_new_instance_is_inserted_with_its_process(task):
    run = AgentRun.objects.begin(by="worker:test", task=task)
    with running_step(run), CaptureQueriesContext(connection) as captured:
        instance = begin(task)

    assert statements(captured, "UPDATE", "fleet_agentinstance") == []
    stored = AgentInstance.objects.get(pk=instance.pk)
    assert stored.process_id == os.getpid()
    assert stored.process_host == socket.gethostname()
    assert stored.session_name == run.session_id
    assert stored.started_at is not None
    assert stored.heartbeat_at == stored.last_activity == stored.started_at
    # The run is linked to it, in the database and on the worker's object.
    assert AgentRun.objects.get(pk=run.pk).instance_id == instance.pk
    assert run.instance_id == instance.pk


@pytest.mark.parametrize("phase", ["verification", "review"])
def test_an_instance_after_the_coding_one_is_inserted_with_its_process(task, phase):
    coding = begin(task)
    put_in_state(task, phase=phase)
    run = AgentRun.objects.begin(by="worker:test", task=task, session_id="s-9")
    with running_step(run), CaptureQueriesContext(connection) as captured:
        instance = begin(task)

    stored = AgentInstance.objects.get(pk=instance.pk)
    assert stored.parent_id == coding.pk  # verifies or reviews the coding one
    assert (stored.process_id, stored.process_host) == (
        os.getpid(),
        socket.gethostname(),
    )
    assert stored.session_name == run.session_id
    assert stored.started_at is not None
    # The coding instance's review request is the only instance UPDATE.
    updates = statements(captured, "UPDATE", "fleet_agentinstance")
    updates += statements(captured, "WITH", "fleet_agentinstance")
    assert all(f'"id" = {instance.pk}' not in sql for sql in updates)


def test_a_reused_instance_is_stamped_with_the_new_process(task):
    first = begin(task)
    AgentInstance.objects.filter(pk=first.pk).update(
        process_id=1, process_host="elsewhere"
    )
    run = AgentRun.objects.begin(by="worker:test", task=task)
    with running_step(run):
        again = begin(task)

    assert again.pk == first.pk
    stored = AgentInstance.objects.get(pk=first.pk)
    assert (stored.process_id, stored.process_host) == (
        os.getpid(),
        socket.gethostname(),
    )
    assert stored.session_name == run.session_id
    assert stored.started_at == first.started_at  # when it first started


def test_the_named_step_run_is_used_without_a_query(task):
    run = AgentRun.objects.begin(by="worker:test", task=task)
    with running_step(run), CaptureQueriesContext(connection) as captured:
        assert running_run(task) is run
    assert captured.captured_queries == []


def test_without_a_named_run_the_running_one_is_looked_up(task):
    run = AgentRun.objects.begin(by="worker:test", task=task)
    assert running_run(task) == run


def test_a_run_named_for_another_task_is_not_taken(task):
    other = make_task()
    theirs = AgentRun.objects.begin(by="worker:test", task=other, session_id="s-1")
    ours = AgentRun.objects.begin(by="worker:test", task=task, session_id="s-2")
    with running_step(theirs):
        assert running_run(task) == ours


def test_the_name_ends_with_the_step(task):
    run = AgentRun.objects.begin(by="worker:test", task=task)
    with running_step(run):
        pass
    run.perform("succeed", by="worker:test", reason="done")
    assert running_run(task) is None
