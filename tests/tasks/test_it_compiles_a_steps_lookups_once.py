"""The lookups every step of every task makes are compiled to SQL once per
worker (codex.core.store.compiled_query): a second step compiles none of them, and
each still reads the row as it is now."""

from __future__ import annotations

import pytest
from django.db.models.sql.compiler import SQLCompiler
from django.utils import timezone

from agents.instances import begin_phase_instance, current_instance
from agents.people import steering_prompt
from codex.children.flow import held_step
from codex.configuration.config import get_config
from codex.configuration.credentials import current_credential
from codex.configuration.models import Setting
from codex.core.store.side_effects import perform_once
from codex.tasks.models import ControlRequest, SteeringMessage, Task
from tests.factories import make_task, put_in_state

pytestmark = pytest.mark.django_db


def lookups(task: Task) -> list:
    return [
        Task.objects.with_repository(task.task_id),
        current_instance(task, "writer"),
        held_step(task, by="worker:test"),
        get_config("review.max_iterations"),
        current_credential("anthropic"),
        perform_once(f"test:{task.task_id}", lambda: {"made": 1}),
        task.apply_control_requests(),  # at the step's start and end
        steering_prompt(task, "writer"),  # before every turn of the run
    ]


@pytest.fixture
def compiled(monkeypatch):
    seen: list = []
    original = SQLCompiler.as_sql

    def counting(self, *args, **kwargs):
        seen.append(self.query.model)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(SQLCompiler, "as_sql", counting)
    return seen


@pytest.mark.django_db(transaction=True)  # perform_once commits its record
def test_a_second_step_compiles_none_of_them(compiled):
    task = make_task(issue_number=3)
    put_in_state(task, status="in_progress", phase="implementation")
    begin_phase_instance(task, worktree="/wt/x", branch="codex/x")
    lookups(task)  # the first step of the process compiles what it must
    compiled.clear()
    found = lookups(task)
    assert compiled == []
    assert found[0] == task and found[0].repository == task.repository
    assert found[1] is not None and found[1].role == "writer"
    assert found[2] is None  # an ordinary step: no fan-out holds it
    assert found[5] == {"made": 1}
    assert found[6] == [] and found[7] == ""


def test_they_read_what_is_stored_now():
    task = make_task()
    before = get_config("review.max_iterations")
    Setting.objects.update_or_create(
        key="review.max_iterations", defaults={"value": str(before + 2)}
    )
    assert get_config("review.max_iterations") == before + 2
    other = make_task()
    assert Task.objects.with_repository(other.task_id) == other
    assert Task.objects.with_repository(task.task_id) == task
    assert Task.objects.with_repository("FEAT-00000000-nothing") is None


def test_the_step_lists_read_what_is_stored_now():
    task, other = make_task(), make_task()
    first = SteeringMessage.objects.create(
        task=task, author="alice", source="page", body="one"
    )
    second = SteeringMessage.objects.create(
        task=task, author="bob", source="page", body="two"
    )
    SteeringMessage.objects.create(task=other, author="eve", source="page", body="x")
    assert SteeringMessage.objects.undelivered_to(task.pk) == [first, second]
    SteeringMessage.objects.filter(pk=first.pk).update(delivered_at=timezone.now())
    assert SteeringMessage.objects.undelivered_to(task.pk) == [second]

    pause = ControlRequest.objects.create(task=task, action="pause", requested_by="a")
    ControlRequest.objects.create(task=other, action="cancel", requested_by="b")
    assert ControlRequest.objects.pending_of(task.pk) == [pause]
    ControlRequest.objects.filter(pk=pause.pk).update(applied_at=timezone.now())
    assert ControlRequest.objects.pending_of(task.pk) == []
