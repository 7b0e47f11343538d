"""Clean diffs on the local forge: a scratch file the developer made through
the shell never ships unless it keeps it when asked, and a role that only
checks (QA) leaves the worktree as it found it, whatever its shell did."""

from __future__ import annotations

import pytest

from agents.demo import git
from codex.repositories.models import Repository
from codex.tasks.jobs import advance_task
from tests.agents_e2e.test_agents_end_to_end import (
    MUL_OK,
    QA_APPROVE,
    TEST_MUL,
    intake_and_planning,
    steps,
)
from tests.factories import make_task
from tests.model_stub import message, submit, tool_use

pytestmark = pytest.mark.django_db(transaction=True)

SUBMITTED = {"summary": "Added mul.", "commit_message": "Add mul", "tasks_completed": 1}


@pytest.fixture
def repository(bare_repo):
    return Repository.objects.create(url=f"file://{bare_repo}")


def test_scratch_files_are_removed_and_qa_changes_are_reset(
    agent_settings, stub, repository
):
    stub.add(
        *intake_and_planning(),
        message(
            tool_use("write_file", {"path": "calc.py", "content": MUL_OK}),
            tool_use("write_file", {"path": "test_mul.py", "content": TEST_MUL}),
            # A reproduction script and its output, made through the shell.
            tool_use(
                "bash",
                {
                    "command": "mkdir -p tmp && echo 'print(1)' > repro.py && "
                    "echo out > tmp/log.txt"
                },
            ),
        ),
        message(tool_use("review_changes", {})),
        submit(SUBMITTED),
        # Asked about the files its shell made, it keeps none.
        submit({**SUBMITTED, "keep_files": []}),
    )
    task = make_task(repository, title="Add multiplication")
    assert steps(task, 3)[-1] == "in_progress/verification"

    asked = stub.bodies[6]["messages"][-1]["content"][0]
    assert asked["is_error"] is True
    assert "made through the shell" in asked["content"]
    assert "repro.py" in asked["content"] and "tmp/log.txt" in asked["content"]

    review = stub.bodies[5]["messages"][-1]["content"][0]["content"]
    assert "+def mul(a, b):" in review
    assert "New files, to be committed: test_mul.py" in review
    assert "removed as scratch" in review and "repro.py" in review
    task.refresh_from_db()
    shipped = git(
        "show", "--name-only", "--format=", task.branch, cwd=repository.local_path
    )
    assert set(shipped.split()) == {"calc.py", "test_mul.py"}
    event = task.events.get(data__tool="drop_scratch")
    assert set(event.data["files"]) == {"repro.py", "tmp/log.txt"}

    # QA has no write tools; what its shell changes is reset after its run.
    stub.add(
        message(
            tool_use(
                "bash", {"command": "echo junk > qa_notes.txt && echo '# x' >> calc.py"}
            )
        ),
        QA_APPROVE,
    )
    assert advance_task(task.task_id) == "in_progress/review"
    offered = {tool["name"] for tool in stub.bodies[-1]["tools"]}
    assert not offered & {"write_file", "edit_file", "delete_file", "move_file"}
    reset = task.events.get(data__tool="reset_worktree")
    assert any("qa_notes.txt" in line for line in reset.data["changed"])
    worktree = agent_settings.CODEX_WORKTREE_ROOT + f"/{task.task_id}"
    assert git("status", "--porcelain", cwd=worktree) == ""
