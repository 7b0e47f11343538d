"""Spec 002 §2.1: `created_by: "form"  # form | api | manual` and
`current_agent: "dev"  # pm | dev | qa | reviewer | none`. The envelope takes
no other value, in the database or in task-envelope.yml."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, connection, transaction

from codex.tasks.exports import task_envelope
from codex.tasks.models import Agent, CreatedBy, Task
from tests.factories import make_task
from tests.pipeline.helpers import run_steps

pytestmark = pytest.mark.django_db

CREATED_BY = {"form", "api", "manual"}
CURRENT_AGENT = {"pm", "dev", "qa", "reviewer", "none"}


def test_the_choices_are_the_specs_enums():
    assert set(CreatedBy.values) == CREATED_BY
    assert set(Agent.values) == CURRENT_AGENT


@pytest.mark.parametrize(
    ("field", "value"),
    [("created_by", "github"), ("current_agent", "planner"), ("current_agent", "")],
)
def test_the_database_refuses_a_value_outside_them(field, value):
    task = make_task()
    table = Task._meta.db_table

    with (
        pytest.raises(IntegrityError),
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        cursor.execute(
            f"UPDATE {table} SET {field} = %s WHERE id = %s", [value, task.pk]
        )


def test_every_step_of_a_run_exports_envelope_values(scripted_runner, monkeypatch):
    from tests.phase_runner import ScriptedPhaseRunner

    seen = []
    original = ScriptedPhaseRunner.run

    def run(self, task):
        envelope = task_envelope(task)
        seen.append((envelope["created_by"], envelope["current_agent"]))
        return original(self, task)

    monkeypatch.setattr(ScriptedPhaseRunner, "run", run)
    task = make_task(issue_number=12)

    run_steps(task)

    assert task.status == "completed"
    assert {created for created, _ in seen} == {"api"}
    assert {agent for _, agent in seen} <= CURRENT_AGENT
    assert task_envelope(task)["current_agent"] == "none"
