"""A commit after each task of tasks.md (the recovery point), and a later
attempt that is told which tasks are already committed."""

from __future__ import annotations

import pytest

from agents.demo import git
from codex.repositories.models import Repository
from tests.agents_e2e.test_agents_end_to_end import MUL_OK, SPEC, TEST_MUL, steps
from tests.factories import make_task
from tests.model_stub import message, submit, tool_use

pytestmark = pytest.mark.django_db(transaction=True)

SUB = MUL_OK + "\n\ndef sub(a, b):\n    return a - b\n"
TEST_SUB = "from calc import sub\n\n\ndef test_sub():\n    assert sub(3, 2) == 1\n"


@pytest.fixture
def repository(bare_repo):
    return Repository.objects.create(url=f"file://{bare_repo}")


def two_task_plan():
    return [
        submit({"should_proceed": True, "needs_clarification": False, "spec_md": SPEC}),
        submit(
            {
                "plan_md": "# Implementation Plan\n\nmul, then sub.",
                "tasks": [{"title": "Add mul"}, {"title": "Add sub"}],
            }
        ),
    ]


def test_each_task_is_its_own_commit_and_a_retry_skips_committed_ones(
    agent_settings, stub, repository
):
    stub.add(
        *two_task_plan(),
        # First attempt: T001 done and committed, then the run ends early.
        message(
            tool_use("write_file", {"path": "calc.py", "content": MUL_OK}),
            tool_use("write_file", {"path": "test_mul.py", "content": TEST_MUL}),
        ),
        message(tool_use("commit_task", {"task": "T001", "message": "Add mul"})),
        # Committing it again is refused; so is a task that does not exist.
        message(
            tool_use("commit_task", {"task": "T001", "message": "again"}),
            tool_use("commit_task", {"task": "T009", "message": "nope"}),
        ),
        submit({"summary": "mul done.", "commit_message": "wip", "tasks_completed": 1}),
    )
    task = make_task(repository, title="Add mul and sub")

    assert steps(task, 3)[-1] == "in_progress/implementation"

    bare = repository.local_path
    branch = f"codex/{task.task_id}"
    log = git(
        "log", "--format=%s|%(trailers:key=Codex-Step,valueonly)", branch, cwd=bare
    )
    assert log.splitlines()[0].strip() == "T001: Add mul|T001"
    results = [
        block
        for body in stub.bodies[4:]
        for m in body["messages"]
        if isinstance(m["content"], list)
        for block in m["content"]
        if block.get("type") == "tool_result"
    ]
    assert any("already committed" in str(r["content"]) for r in results)
    assert any("T009 is not a task of tasks.md" in str(r["content"]) for r in results)
    task.refresh_from_db()
    assert task.current_task == 1 and len(task.commits) == 1

    # The next attempt is told T001 is done and does T002 only.
    stub.add(
        message(
            tool_use("write_file", {"path": "calc.py", "content": SUB}),
            tool_use("write_file", {"path": "test_sub.py", "content": TEST_SUB}),
        ),
        message(tool_use("commit_task", {"task": "T002", "message": "Add sub"})),
        submit({"summary": "sub done.", "commit_message": "x", "tasks_completed": 2}),
    )
    assert steps(task, 1)[-1] == "in_progress/verification"

    prompt = stub.bodies[-3]["messages"][0]["content"][0]["text"]
    assert "Already committed on the branch" in prompt
    assert "- T001: Add mul (commit" in prompt and "Still to do: T002." in prompt
    subjects = git("log", "--format=%s", f"main..{branch}", cwd=bare).split("\n")
    assert subjects[:2] == ["T002: Add sub", "T001: Add mul"]
    task.refresh_from_db()
    assert task.current_task == 2 and len(task.commits) == 2
    commit_events = task.events.filter(kind="tool", data__tool="commit")
    assert sorted(commit_events.values_list("data__step", flat=True)) == [
        "T001",
        "T002",
    ]
