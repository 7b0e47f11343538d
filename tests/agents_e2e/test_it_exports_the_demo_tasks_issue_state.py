"""The demo's task, once merged, exports a complete issue-state.json: what
each agent recorded (triage, analysis, writer, build, review, commit)."""

from __future__ import annotations

import pytest

from codex.tasks.exports import issue_state
from codex.tasks.models import Task
from tests.agents_e2e.test_demo import run_demo

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_demo_tasks_issue_state_is_complete(tmp_path):
    run_demo(tmp_path / "demo")
    task = Task.objects.get()

    state = issue_state(task)

    assert state["pipeline"]["status"] == "completed"
    assert state["triage"]["completed"] and state["triage"]["scope"] == "SMALL"
    assert state["triage"]["should_proceed"] is True
    assert state["analysis"]["completed"]
    assert state["analysis"]["brief"].startswith("Add mul next to add")
    assert state["analysis"]["files"][0]["path"] == "calc.py"
    assert state["writer"]["summary"] == "Added mul and its test."
    assert {"file": "calc.py", "description": "modified"} in state["writer"]["changes"]
    assert state["writer"]["test_file"] == "test_mul.py"
    assert state["build"]["completed"] and state["build"]["tests_passed"]
    assert state["build"]["commands_run"]
    assert state["review"]["verdict"] == "APPROVED"
    assert state["review"]["findings"]["good"]
    assert state["commit"]["message"] == "Add mul"
    assert state["commit"]["hash"] and state["commit"]["pr_url"]
    if task.issue_number:
        assert state["issue"]["labels"] == ["enhancement"]
