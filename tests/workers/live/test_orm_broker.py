"""Live workers on the ORM broker (the default): at-least-once delivery.

A job a cluster took is claimed in its OrmQ row (codex.core.workers.brokers); when the
cluster dies, the next cluster to start (or any live one, within its sweep)
frees the dead worker's task lease and hands the job back to the queue, so the
new worker runs the phase again at once. What must hold: the task completes
exactly once, and the outside side effects of the repeated phase ("create a
pull request", "merge") happen exactly once, because perform_once recorded
the attempt and looks it up.
"""

from __future__ import annotations

import time

import pytest
from django_q.brokers.orm import ORM
from django_q.models import Task as QueuedTaskResult
from django_q.tasks import async_task

from codex.core.store.side_effects import SideEffect, SideEffectStatus
from codex.events.models import Event, EventKind
from codex.tasks.models import Phase, Status, Task
from tests.factories import make_task
from tests.workers.live.cluster import JOB_RETRY, LEASE_SECONDS, wait_for, worker_env
from tests.workers.live.helpers import (
    PHASES,
    all_completed,
    assert_no_concurrent_runs,
    assert_side_effects_once,
    completions,
)
from tests.workers.live.side_effect_runner import side_effect_key

pytestmark = [pytest.mark.postgresql, pytest.mark.django_db(transaction=True)]

ADVANCE_JOB = "codex.tasks.jobs.advance_task"


@pytest.fixture
def orm_broker(enqueue_via):
    return enqueue_via(ORM())


def test_sigkill_mid_side_effect_is_redelivered_and_nothing_happens_twice(
    clusters, files, orm_broker, tmp_path
):
    tasks = [make_task(title=f"Crash safety {n}") for n in range(3)]
    task_ids = [task.task_id for task in tasks]
    env = worker_env(
        files,
        workers=2,
        sleep_seconds=3,
        sleep_phases=("implementation",),
        sleep_where="action",
        var_dir=tmp_path,
    )
    first = clusters.start(env)

    # A worker is inside "create a pull request": done outside, not yet
    # recorded as done. Kill the whole cluster right there.
    lines = wait_for(
        files.side_effect_lines,
        60,
        "a worker inside the pull-request side effect",
        clusters=clusters,
        while_alive=[first],
    )
    first.kill()
    killed_at = time.time()
    victim_key = lines[0]
    victim = next(
        t for t in task_ids if side_effect_key(t, "implementation") == lines[0]
    )
    stranded = Task.objects.get(task_id=victim)
    assert (stranded.status, stranded.phase) == (
        Status.IN_PROGRESS,
        Phase.IMPLEMENTATION,
    )
    assert stranded.lease_holder, "the dead worker's lease is still on the row"

    second = clusters.start(env)
    started = time.monotonic()
    wait_for(
        lambda: all_completed(task_ids),
        90,
        "all tasks to complete after the kill",
        clusters=clusters,
        while_alive=[second],
    )
    recovery_seconds = time.monotonic() - started

    for task in Task.objects.filter(task_id__in=task_ids):
        assert task.phase == Phase.RELEASE
        assert task.pr_merged
        assert completions(task) == 1, f"{task.task_id} completed {completions(task)}x"
    assert_side_effects_once(files, task_ids)
    assert_no_concurrent_runs(files, killed_at)

    # The killed attempt left its record "started"; the redelivered step found
    # the pull request by looking it up instead of creating a second one.
    record = SideEffect.objects.get(key=victim_key)
    assert record.status == SideEffectStatus.DONE
    assert record.attempts == 1
    assert record.found_by_lookup
    # The phase ran again (at least once), after the restarted cluster broke
    # the dead worker's lease (without waiting for it to expire).
    victim_runs = [
        run
        for run in files.runs()
        if run["task"] == victim and run["phase"] == "implementation"
    ]
    assert victim_runs[0]["end"] is None, "the first run was cut short by the kill"
    assert any(run["end"] is not None for run in victim_runs)
    assert Event.objects.filter(
        task__task_id=victim,
        kind=EventKind.LEASE,
        actor="system:heartbeat",
        reason__contains="is gone",
    ).exists()
    # Redelivery waited neither for the OrmQ lock (retry) nor for the lease.
    assert recovery_seconds < JOB_RETRY


def test_two_deliveries_of_one_step_run_the_phase_once(
    clusters, files, orm_broker, tmp_path
):
    task = make_task(title="Delivered twice")  # enqueues its first step
    async_task(ADVANCE_JOB, task.task_id)  # and the same step again
    env = worker_env(
        files,
        workers=2,
        sleep_seconds=2,
        sleep_phases=("intake",),
        sleep_where="after",
        var_dir=tmp_path,
    )
    cluster = clusters.start(env)
    wait_for(
        lambda: all_completed([task.task_id]),
        60,
        "the task to complete",
        clusters=clusters,
        while_alive=[cluster],
    )
    # The second worker found the lease held and left the task alone.
    results = wait_for(
        lambda: [
            result
            for result in QueuedTaskResult.objects.filter(func=ADVANCE_JOB).values_list(
                "result", flat=True
            )
            if result == "busy"
        ],
        15,
        'a delivery that answered "busy"',
        clusters=clusters,
    )
    assert results == ["busy"]

    runs = files.runs()
    assert [run["phase"] for run in runs] == PHASES, "each phase ran exactly once"
    assert all(run["end"] is not None for run in runs)
    assert_no_concurrent_runs(files)
    task.refresh_from_db()
    assert completions(task) == 1
    assert_side_effects_once(files, [task.task_id])


def test_a_step_longer_than_its_lease_keeps_it_and_is_not_run_twice_at_once(
    clusters, files, orm_broker, tmp_path
):
    """A phase outlives CODEX_LEASE_SECONDS (here 8 s against a 5 s lease; in
    production an agent run of minutes against 60 s) and a second delivery of
    the step arrives once the lease would have lapsed. The worker's heartbeat
    keeps renewing the lease, so the second delivery answers "busy" and the
    phase runs once. Without a renewal (advance_task before its Heartbeat) the
    second worker took over the "expired" lease, ran intake at the same time,
    and the first worker's step was discarded as a version conflict."""
    task = make_task(title="Longer than its lease")
    env = worker_env(
        files,
        workers=2,
        sleep_seconds=LEASE_SECONDS + 3,
        sleep_phases=("intake",),
        sleep_where="after",
        var_dir=tmp_path,
    )
    cluster = clusters.start(env)
    started = wait_for(
        files.run_entries_started,
        30,
        "the first intake run",
        clusters=clusters,
        while_alive=[cluster],
    )[0]["t"]
    # Past the lease the step took at its start: only a renewal keeps it.
    time.sleep(max(0.0, started + LEASE_SECONDS + 1 - time.time()))
    task.refresh_from_db()
    assert task.lease_is_active, (
        f"the lease lapsed while the phase still ran: {task.lease_holder} until "
        f"{task.lease_expires_at}"
    )
    async_task(ADVANCE_JOB, task.task_id)  # a second delivery of the same step
    wait_for(
        lambda: all_completed([task.task_id]),
        60,
        "the task to complete",
        clusters=clusters,
        while_alive=[cluster],
    )
    assert_no_concurrent_runs(files)
    assert [run["phase"] for run in files.runs()] == PHASES
    assert completions(task) == 1
    assert_side_effects_once(files, [task.task_id])
    wait_for(
        lambda: (
            "busy"
            in QueuedTaskResult.objects.filter(func=ADVANCE_JOB).values_list(
                "result", flat=True
            )
        ),
        15,
        'the second delivery to answer "busy"',
        clusters=clusters,
    )
