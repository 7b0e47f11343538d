"""A step that kills its worker every time (out of memory, a crashing
library) is handed back CODEX_JOB_REDELIVERIES times, then given up: its task
is blocked with the reason and no retry time (an operator decides), the job is
recorded as failed, and the cluster goes on with its other work instead of
losing a worker to it for ever. On both brokers."""

from __future__ import annotations

import time

import pytest
from django_q.models import Task as JobResult

from codex.tasks.models import Status, Task
from tests.factories import make_task
from tests.workers.live.brokers import REDIS_TEST_URL, held
from tests.workers.live.cluster import wait_for, worker_env
from tests.workers.live.helpers import all_completed
from tests.workers.live.side_effect_runner import DIE_PHASES

pytestmark = [pytest.mark.postgresql, pytest.mark.django_db(transaction=True)]

REDELIVERIES = 2


def test_a_job_that_kills_its_worker_every_time_is_given_up(
    clusters, files, broker, tmp_path
):
    kind, _, client = broker
    env = worker_env(
        files,
        workers=2,
        redis_url=REDIS_TEST_URL if kind == "redis" else None,
        var_dir=tmp_path,
    )
    env.update(
        {
            DIE_PHASES: "planning",
            "CODEX_JOB_REDELIVERIES": str(REDELIVERIES),
        }
    )
    cluster = clusters.start(env)
    poison = make_task(title="Crashes its worker")

    def stopped() -> Task | None:
        task = Task.objects.get(pk=poison.pk)
        return None if task.status in (Status.PENDING, Status.IN_PROGRESS) else task

    task = wait_for(
        stopped, 60, "the task to be stopped", clusters=clusters, while_alive=[cluster]
    )
    assert task.status == Status.BLOCKED
    assert "keeps killing its worker" in task.blocked_reason
    assert f"CODEX_JOB_REDELIVERIES is {REDELIVERIES}" in task.blocked_reason
    assert task.blocked_until is None, "it waits for an operator, not a timer"
    assert task.lease_holder is None
    failed = JobResult.objects.get(func="codex.tasks.jobs.advance_task", success=False)
    assert failed.result.startswith("given up:")
    assert failed.args == (task.task_id,)

    # Run once, handed back twice, then never again.
    time.sleep(3)
    planning = [run for run in files.runs() if run["phase"] == "planning"]
    assert len(planning) == 1 + REDELIVERIES
    assert held(kind, client) == 0
    assert "handed back 1 job(s) of dead workers" in cluster.log()

    # The cluster is whole and keeps working.
    env_ok = {**env, DIE_PHASES: ""}
    cluster.stop()
    survivor = clusters.start(env_ok)
    healthy = make_task(title="Healthy")
    wait_for(
        lambda: all_completed([healthy.task_id]),
        60,
        "a healthy task to complete",
        clusters=clusters,
        while_alive=[survivor],
    )
    assert Task.objects.get(pk=poison.pk).status == Status.BLOCKED
