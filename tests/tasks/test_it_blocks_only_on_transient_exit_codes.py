"""Spec 002 §3.4 status transitions: "in_progress → blocked | Transient failure
detected | exit_code ∈ {23, 124}, retries < max", and "in_progress → failed |
Unrecoverable error | Max retries on non-transient error"."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django_fsm import TransitionNotAllowed

from codex.tasks.models import Task
from codex.tasks.runners import PhaseResult
from tests.factories import make_task, put_in_state
from tests.pipeline.helpers import run_steps

pytestmark = pytest.mark.django_db


def working_task() -> Task:
    return put_in_state(make_task(), status="in_progress", phase="implementation")


@pytest.mark.parametrize("exit_code", [23, 124])
def test_a_transient_exit_code_blocks(exit_code):
    task = working_task()

    task.perform("block", by="worker:1", reason="try later", exit_code=exit_code)

    assert Task.objects.get(pk=task.pk).status == "blocked"


@pytest.mark.parametrize("exit_code", [None, 0, 1, 2, 125, 137])
def test_any_other_exit_code_is_refused_and_changes_nothing(exit_code):
    task = working_task()
    version = task.version

    with pytest.raises(TransitionNotAllowed, match="exit code 23 or 124"):
        task.perform("block", by="worker:1", reason="broken", exit_code=exit_code)

    row = Task.objects.get(pk=task.pk)
    assert (row.status, row.version, row.retry_count) == ("in_progress", version, 0)
    assert not row.events.filter(target="blocked").exists()


def test_the_pipeline_records_the_exit_code_it_blocked_on(scripted_runner):
    scripted_runner.queue(
        "intake",
        PhaseResult.blocked("GitHub is down"),
        PhaseResult.blocked("rate limited", retry_after=timedelta(minutes=2)),
    )
    task = make_task()

    run_steps(task)
    assert task.status == "blocked"
    task.perform("unblock", by="user:alice")
    run_steps(task)

    assert task.status == "blocked"
    assert [error["exit_code"] for error in task.errors] == [23, 124]
