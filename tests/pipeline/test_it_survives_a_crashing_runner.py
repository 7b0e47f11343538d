"""A phase runner that raises must not strand the task: the step is recorded as
a transient failure (blocked, with the error in the envelope) and the lease is
given back, instead of the job failing with the task left in_progress."""

from __future__ import annotations

import pytest

from codex.tasks.jobs import advance_task
from tests.factories import make_task


class ExplodingRunner:
    def run(self, task):
        raise RuntimeError("model client exploded")


@pytest.mark.django_db
def test_a_crashing_runner_blocks_the_task_with_the_error(settings):
    settings.CODEX_PHASE_RUNNER = (
        "tests.pipeline.test_it_survives_a_crashing_runner.ExplodingRunner"
    )
    task = make_task()
    assert advance_task(task.task_id) == "blocked/intake"
    task.refresh_from_db()
    assert task.status == "blocked"
    assert "RuntimeError: model client exploded" in task.blocked_reason
    assert task.errors[-1]["message"] == task.blocked_reason
    assert task.lease_holder is None
