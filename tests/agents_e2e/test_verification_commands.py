"""Verification with the repository's own commands, end to end on the local
forge: a command that cannot run is a person's to fix, before any agent."""

from __future__ import annotations

import pytest

from codex.repositories.models import Repository
from codex.tasks.jobs import advance_task
from tests.factories import make_task, put_in_state

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_command_that_cannot_run_escalates_without_an_agent_run(
    agent_settings, stub, bare_repo
):
    repository = Repository.objects.create(
        url=f"file://{bare_repo}", lint_command="eslint --max-warnings 0 ."
    )
    task = put_in_state(make_task(repository), "in_progress", "verification")

    assert advance_task(task.task_id) == "escalated/verification"

    assert stub.requests == []
    detail = task.escalations.get().detail
    assert detail.startswith("the lint command `eslint --max-warnings 0 .` could not")
    assert "'eslint' is not installed" in detail
