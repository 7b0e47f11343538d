"""`manage.py demo`: the scripted walk through all six phases, twice; the
merged task exports a complete issue-state.json."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

from agents.demo import BANNER, MUL, TEST_MUL, git
from codex.repositories.models import Repository
from codex.tasks.exports import issue_state
from codex.tasks.models import Task

pytestmark = pytest.mark.django_db(transaction=True)


def run_demo(root) -> str:
    out = StringIO()
    call_command("demo", root=root, stdout=out)
    return out.getvalue()


def test_the_demo_merges_a_scripted_change_and_can_run_again(tmp_path, settings):
    # Links name where `make run` listens (it exports its HOST and PORT).
    settings.CODEX_CONSOLE_ADDRESS = "127.0.0.1:8123"
    output = run_demo(tmp_path / "demo")

    task = Task.objects.get()
    assert task.status == "completed" and task.pr_merged
    assert task.created_by == "manual"
    assert task.events.get(kind="created").actor == "demo"
    bare = tmp_path / "demo" / "sample.git"
    assert Repository.objects.get().local_path == str(bare)
    assert git("show", "main:calc.py", cwd=bare) == MUL
    assert git("show", "main:test_mul.py", cwd=bare) == TEST_MUL
    assert BANNER in output
    for shown in (
        task.task_id,
        "spec.md",
        "release-notes.md",
        "verification: approve, tests 2 passed / 0 failed / 2 total",
        f"http://127.0.0.1:8123/admin/tasks/task/{task.pk}/change/",
        f"http://127.0.0.1:8123/tasks/{task.task_id}/",
        f"email  sent    to team@example.com: {task.task_id} released",
        "Merge gate: approval",
        "approved by user:demo-reviewer",
        "The progress comment on issue #1 (one, edited in place):",
        "status: **completed**",
        "Demo done",
    ):
        assert shown in output
    # The gate's escalation and the release went out through Django's file
    # email backend.
    subjects = sorted(
        line
        for mail in (tmp_path / "demo" / "mail").iterdir()
        for line in mail.read_text().splitlines()
        if line.startswith("Subject:")
    )
    assert subjects == [
        f"Subject: {task.task_id} needs a decision: Merge approval",
        f"Subject: {task.task_id} released: Add multiplication",
    ]
    assert task.gates.get().decided_by == "user:demo-reviewer"
    # The gate waited as an escalation of its own kind, answered with an approval.
    escalation = task.escalations.get()
    assert (escalation.reason, escalation.decision, escalation.resolved_by_label) == (
        "merge_approval",
        "approve",
        "user:demo-reviewer",
    )
    statuses = set(
        task.events.filter(kind="transition", field="status", subject="").values_list(
            "target", flat=True
        )
    )
    assert statuses <= {"in_progress", "escalated", "completed"}
    assert_issue_state_is_complete(task)

    # Again: the sample repository is reset, a second task merges the same change.
    run_demo(tmp_path / "demo")
    assert Repository.objects.count() == 1
    assert list(Task.objects.values_list("status", flat=True)) == ["completed"] * 2
    assert git("show", "main:calc.py", cwd=bare) == MUL
    assert len(git("log", "--format=%h", "main", cwd=bare).split()) == 2


def assert_issue_state_is_complete(task: Task) -> None:
    """The merged demo task exports a complete issue-state.json: what each
    agent recorded (triage, analysis, writer, build, review, commit)."""
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
