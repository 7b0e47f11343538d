"""A long command's output reaches the task's live page while it runs: the
jail hands it to the run's output stream, which keeps its tail with the task
(docs/domain/fleet.md#live-output), and the page's status block shows it to
the team."""

from __future__ import annotations

import threading
import time

import pytest

from codex.fleet.models import LiveOutput
from codex.repositories.models import Repository
from codex.tasks.jobs import advance_task
from tests.agents_e2e.test_agents_end_to_end import intake_and_planning, steps
from tests.factories import make_task
from tests.model_stub import message, submit, tool_use

pytestmark = pytest.mark.django_db(transaction=True)

DONE = {"summary": "Ran it.", "commit_message": "Add x", "tasks_completed": 1}
COMMAND = "for n in 1 2 3 4; do echo step $n; sleep 1; done; echo x > x.txt"


@pytest.fixture
def repository(bare_repo):
    return Repository.objects.create(url=f"file://{bare_repo}")


def test_a_commands_output_is_shown_while_it_runs(
    agent_settings, stub, repository, client, operator
):
    agent_settings.CODEX_SANDBOX_COMMAND_TIMEOUT = 30
    stub.add(
        *intake_and_planning(),
        message(tool_use("bash", {"command": COMMAND})),
        message(tool_use("write_file", {"path": "x.py", "content": "x = 1\n"})),
        submit({**DONE, "keep_files": []}),
    )
    task = make_task(repository, title="Add x")
    assert steps(task, 2)[-1] == "in_progress/implementation"

    seen: list[str] = []

    def watch() -> None:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and "step 4" not in "".join(seen[-1:]):
            row = LiveOutput.objects.filter(task=task).first()
            if row is not None and (not seen or seen[-1] != row.text):
                seen.append(row.text)
            time.sleep(0.2)

    watcher = threading.Thread(target=watch)
    watcher.start()
    assert advance_task(task.task_id) == "in_progress/verification"
    watcher.join()

    # Seen before the command ended: an early tail without the last step.
    assert any("step 1" in text and "step 4" not in text for text in seen), seen
    row = LiveOutput.objects.get(task=task)
    assert row.role == "developer" and "step 4" in row.text

    client.force_login(operator)
    page = client.get(f"/tasks/{task.task_id}/").content.decode()
    assert "step 4" in page and "data-live-output" in page
