"""The command jail in the pipeline, end to end on the local forge: the agent's
shell, the repository's setup command (once per worktree, its output kept out
of commits), and a step that cannot run commands escalating with the fix."""

from __future__ import annotations

import pytest

from agents.demo import git
from codex.repositories.models import Repository
from codex.tasks.jobs import advance_task
from integrations.jail import backends as backends_module
from integrations.jail.backends import JailUnavailable, backend_named
from tests.agents_e2e.test_agents_end_to_end import (
    MUL_OK,
    QA_APPROVE,
    intake_and_planning,
)
from tests.factories import make_task, put_in_state
from tests.model_stub import message, submit, tool_use

pytestmark = pytest.mark.django_db(transaction=True)

SETUP = "mkdir -p .deps && echo run >> .deps/setup.log && date > .deps/stamp"


def tool_results(stub) -> str:
    """Every tool result the model was sent, as one text."""
    found = []
    for body in stub.bodies:
        for turn in body.get("messages", []):
            content = turn.get("content")
            for block in content if isinstance(content, list) else []:
                if block.get("type") == "tool_result":
                    inner = block.get("content")
                    found.append(inner if isinstance(inner, str) else repr(inner))
    return "\n".join(found)


@pytest.fixture
def bubblewrap():
    backends_module.forget_backends()
    try:
        backend_named("bubblewrap")
    except JailUnavailable as exc:
        pytest.skip(f"the kernel refuses the jail here: {exc}")
    yield
    backends_module.forget_backends()


def test_setup_runs_once_and_its_files_never_reach_a_commit(
    agent_settings, stub, bare_repo, bubblewrap
):
    repository = Repository.objects.create(
        url=f"file://{bare_repo}", setup_command=SETUP
    )
    stub.add(
        *intake_and_planning(),
        message(
            tool_use("bash", {"command": "cat .deps/setup.log; id -un; pwd"}),
            tool_use("write_file", {"path": "calc.py", "content": MUL_OK}),
        ),
        submit(
            {"summary": "Added mul.", "commit_message": "Add mul", "tasks_completed": 1}
        ),
        QA_APPROVE,
    )
    task = make_task(repository, title="Add multiplication", issue_number=3)
    results = [advance_task(task.task_id) for _ in range(4)]
    assert results[-1] == "in_progress/review", results

    shell = task.events.filter(kind="tool", data__tool="bash").get()
    assert shell.data["success"] is True
    answer = tool_results(stub)
    # One setup for the four steps in this worktree; run as the jail's user.
    assert answer.count("run") == 1 and "codex" in answer and "/workspace" in answer
    committed = git(
        "show", "--stat", "--format=", f"codex/{task.task_id}", cwd=bare_repo
    )
    assert "calc.py" in committed and ".deps" not in committed


def test_a_failing_setup_escalates_with_its_output(
    agent_settings, stub, bare_repo, bubblewrap
):
    repository = Repository.objects.create(
        url=f"file://{bare_repo}", setup_command="echo missing-dependency >&2; exit 3"
    )
    task = make_task(repository)
    assert advance_task(task.task_id) == "escalated/intake"
    detail = task.escalations.get().detail
    assert "setup command failed (exit code 3)" in detail
    assert "missing-dependency" in detail
    assert stub.requests == []


def test_no_jail_escalates_with_the_fix_before_any_agent(
    agent_settings, stub, bare_repo, monkeypatch
):
    backends_module.forget_backends()
    real_which = backends_module.shutil.which
    monkeypatch.setattr(
        backends_module.shutil,
        "which",
        lambda name, *a, **k: None if name == "bwrap" else real_which(name, *a, **k),
    )
    repository = Repository.objects.create(url=f"file://{bare_repo}")
    task = put_in_state(make_task(repository), "in_progress", "implementation")
    assert advance_task(task.task_id) == "escalated/implementation"
    detail = task.escalations.get().detail
    assert "bubblewrap (bwrap) is not installed" in detail
    assert "apt-get install bubblewrap" in detail
    assert stub.requests == []
    backends_module.forget_backends()
