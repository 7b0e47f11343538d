"""Spec 002 §2.1: a task exports as task-envelope.yml with the spec's keys and
nesting. The expected structure is read from the spec's own example."""

from __future__ import annotations

import re

import pytest
import yaml

from codex.tasks.exports import task_envelope, task_envelope_yaml
from codex.tasks.jobs import advance_task
from tests.factories import make_task
from tests.shared_folder import SPECS

SPEC = SPECS / "002_f820255783d87a62.txt"

pytestmark = pytest.mark.django_db


def spec_envelope() -> dict:
    """The YAML example under §2.1 of spec 002."""
    text = SPEC.read_text()
    block = re.search(r"# task-envelope\.yml\n(.*?)```", text, re.S).group(1)
    return yaml.safe_load(block)


def test_the_spec_example_is_found():
    assert spec_envelope()["task_id"] == "FEAT-20260119-abc123"


def test_top_level_keys_are_the_specs_in_the_specs_order():
    task = make_task()
    assert list(task_envelope(task)) == list(spec_envelope())


@pytest.mark.parametrize("section", ["request", "feedback_loops"])
def test_nested_sections_have_the_specs_keys(section):
    exported = task_envelope(make_task())[section]
    expected = spec_envelope()[section]
    assert list(exported) == list(expected)
    for key, value in expected.items():
        if isinstance(value, dict):
            assert list(exported[key]) == list(value)


def test_phases_after_a_full_run_carry_the_specs_fields(scripted_runner):
    task = make_task()
    for _ in range(10):
        advance_task(task.task_id)
    task.refresh_from_db()
    assert task.status == "completed"
    phases = task_envelope(task)["phases"]
    expected = spec_envelope()["phases"]
    assert list(phases) == list(expected)
    for phase in ("intake", "planning"):
        assert set(expected[phase]) <= set(phases[phase]), phase
    assert set(expected["implementation"]) - {"completed_at"} <= set(
        phases["implementation"]
    )
    assert phases["intake"]["output_path"] == f"agent-spec/{task.task_id}/spec.md"
    assert phases["planning"]["output_paths"] == [
        f"agent-spec/{task.task_id}/plan.md",
        f"agent-spec/{task.task_id}/tasks.md",
    ]
    assert phases["verification"]["output_paths"] == [
        f"agent-verification/{task.task_id}/report-1.yml"
    ]


def test_errors_and_escalations_use_the_specs_item_keys(scripted_runner):
    from codex.tasks.runners import PhaseResult

    scripted_runner.queue(
        "intake",
        PhaseResult(
            needs_clarification=True,
            questions=["Should authentication support SSO?"],
            artifacts={"spec.md": "# Feature\n"},
        ),
    )
    task = make_task()
    advance_task(task.task_id)
    task.refresh_from_db()
    task.record_error(message="Timeout during codebase analysis", by="t", exit_code=124)
    envelope = task_envelope(task)
    spec = spec_envelope()
    assert list(envelope["escalations"][0]) == list(spec["escalations"][0])
    assert envelope["escalations"][0]["reason"] == "needs_clarification"
    assert envelope["escalations"][0]["questions"] == [
        "Should authentication support SSO?"
    ]
    assert list(envelope["errors"][0]) == list(spec["errors"][0])
    assert envelope["errors"][0]["exit_code"] == 124


def test_the_yaml_round_trips_and_names_its_location():
    task = make_task(description="As a user,\nI want to log in.")
    text = task_envelope_yaml(task)
    assert text.startswith(
        f"# task-envelope.yml\n# Location: agent-state/{task.task_id}/"
    )
    loaded = yaml.safe_load(text)
    assert loaded["request"]["description"] == "As a user,\nI want to log in."
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", loaded["created_at"])
    assert loaded["version"] == task.version
