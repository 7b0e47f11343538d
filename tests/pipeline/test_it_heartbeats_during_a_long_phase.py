"""Issue 4: a running agent run heartbeats, and the step keeps its lease for as
long as the phase runs, however much longer than the 60 s lease that is."""

from __future__ import annotations

import time

import pytest
from django.db import connection

from codex.fleet.models import AgentRun
from codex.tasks.jobs import advance_task
from codex.tasks.models import Task
from tests.factories import make_task


class SlowRunner:
    """Waits (bounded) until the heartbeat has extended the lease twice."""

    seen_expiries: list = []

    def run(self, task):
        from tests.phase_runner import default_result

        deadline = time.monotonic() + 10
        first = Task.objects.get(pk=task.pk).lease_expires_at
        while time.monotonic() < deadline:
            row = Task.objects.get(pk=task.pk)
            run = AgentRun.objects.filter(task=task).first()
            if row.lease_expires_at > first and run and run.heartbeat_at:
                SlowRunner.seen_expiries = [first, row.lease_expires_at]
                break
            time.sleep(0.05)
        return default_result(task)


@pytest.mark.django_db(transaction=True)
def test_the_lease_and_the_run_are_kept_alive(settings):
    settings.CODEX_PHASE_RUNNER = (
        "tests.pipeline.test_it_heartbeats_during_a_long_phase.SlowRunner"
    )
    settings.CODEX_HEARTBEAT_SECONDS = 0.1
    SlowRunner.seen_expiries = []
    task = make_task()
    version_before = Task.objects.get(pk=task.pk).version
    assert advance_task(task.task_id) == "in_progress/planning"
    first, later = SlowRunner.seen_expiries
    assert later > first, "the heartbeat pushed the lease out"
    run = AgentRun.objects.get(task=task)
    assert run.heartbeat_at is not None
    assert run.status == "succeeded"
    task.refresh_from_db()
    # lease, start, and the final save that releases: heartbeats added none.
    assert task.version == version_before + 3
    assert task.lease_holder is None
    connection.close()


@pytest.mark.django_db
def test_a_lost_lease_is_noticed():
    from codex.tasks.jobs import Heartbeat

    task = make_task()
    task.acquire_lease("worker:a")
    run = AgentRun.objects.begin(by="worker:a", task=task)
    heartbeat = Heartbeat(task, "worker:a", run)
    heartbeat.beat()
    assert not heartbeat.lost
    Task.objects.get(pk=task.pk).break_lease(by="user:op")
    heartbeat.beat()
    assert heartbeat.lost
    assert heartbeat.beats == 2
