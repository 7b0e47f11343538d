"""Chaos: 50 tasks through all six phases while a loop SIGKILLs workers.

Live `manage.py qcluster` subprocesses run the real AgentPhaseRunner (the
anthropic SDK against the scripted loopback model of tests/live_pipeline.py)
on the ORM broker, merging into a bare repository on the local forge. While
they work, a chaos loop SIGKILLs a random worker twenty times: half the time a
whole cluster (its process group: sentinel, pusher, monitor, workers; a
fresh cluster is started in its place), half the time one worker process of a
cluster (its sentinel forks a replacement). Each kill strands a step: its
OrmQ row is delivered again once its lock lapses (CODEX_JOB_RETRY), by when
the dead worker's task lease has expired (CODEX_LEASE_SECONDS).

What must hold afterwards: all 50 tasks completed; each task's pull request
was opened once and merged once (LocalPullRequest rows for its branch; one
squash commit naming the task on main in the bare repository); its issue got
exactly one comment (the release's "Done in ..."); every notification of the
outbox was handed to the sender at most once (the FileSender's log).

Notifications: a task moving through its phases queues none (only stuck-task
recovery alerts use the outbox), so the test queues one per task and has the
workers drain the outbox (codex.notifications.jobs.drain_outbox, enqueued
again and again) while the kills go on. The outbox promises at most once: a
worker killed between claiming a row and marking it sent leaves it `sending`
for an operator, never re-sent automatically.

Time: on the shared two-core machine (load average about 10 from parallel
test runs) 50 tasks take about 250 s through four workers with no kills, and
about 340 s with the kills (the whole test about 6 minutes): over the 3-minute
target, bounded by the machine's throughput rather than by recovery. The
kills cost one CODEX_JOB_RETRY (50 s) of delay per stranded step, in parallel
with the other tasks' work.
"""

from __future__ import annotations

import os
import random
import signal
import time
from collections import Counter

import pytest
from django_q.tasks import async_task

from codex.events.models import Event, EventKind
from codex.fleet.models import AgentRun, RunStatus
from codex.notifications.models import Notification, NotificationStatus
from codex.tasks.jobs import resume_due_tasks
from codex.tasks.models import Status, Task
from tests.live_pipeline import (  # noqa: F401 (live_clusters is a fixture)
    feature_files,
    live_clusters,
    live_pipeline,
)
from tests.workers_live.helpers import completions
from tests.workers_live.side_effect_runner import read_lines

pytestmark = [pytest.mark.postgresql, pytest.mark.django_db(transaction=True)]

TASKS = 50
KILLS = 20
CLUSTERS = 3  # alive at any time
WORKERS = 2  # per cluster
# CHAOS_SEED replays another sequence of kills (to reproduce a failure).
SEED = int(os.environ.get("CHAOS_SEED", "20261122"))
# Seconds between kills, drawn uniformly: short enough that all twenty land
# while the tasks still run (with the sample's QA cheap, 50 tasks take ~100 s).
KILL_EVERY = (1.5, 4.0)
SETTLE_SECONDS = 600
DRAIN_JOB = "codex.notifications.jobs.drain_outbox"
REAP_JOB = "codex.fleet.heartbeats.reap_stale_work"
# Recovery settings, short so that a stranded step comes back within seconds:
# the lease (5 s) and the OrmQ lock (CODEX_JOB_RETRY) of a dead worker's step
# lapse quickly. The job timeout stays well above a step's duration on a busy
# machine (QA runs pytest; 10 s was too short with seven other test runs on
# two cores): a timed-out step is a kill of its own, retried the same way.
RECOVERY_ENV = {
    "CODEX_JOB_TIMEOUT": "45",
    "CODEX_JOB_RETRY": "50",
    "CODEX_HEARTBEAT_STALE_SECONDS": "20",
}


def process_group(pid: int) -> int | None:
    """The process group of `pid` (from /proc), None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            # After the command name in parentheses: state, ppid, pgrp, ...
            return int(handle.read().rsplit(")", 1)[1].split()[2])
    except (OSError, IndexError, ValueError):
        return None


def busy_workers(clusters) -> list[tuple[int, object]]:
    """(pid, cluster) of every worker process that holds a task's lease right
    now, i.e. is inside a step. A lease holder is worker:<host>:<pid>."""
    by_group = {cluster.pid: cluster for cluster in clusters}
    busy = []
    holders = Task.objects.filter(lease_holder__startswith="worker:").values_list(
        "lease_holder", flat=True
    )
    for holder in holders:
        pid = int(holder.rsplit(":", 1)[-1])
        group = process_group(pid)
        if group in by_group:
            busy.append((pid, by_group[group]))
    return busy


def drive_schedules() -> None:
    """What the scheduler does once a minute, every few seconds instead: drain
    the outbox and reap silent runs (both in the workers, which know the
    worktree root), resume blocked tasks whose time has come."""
    global _last_tick
    now = time.monotonic()
    if now - _last_tick < 3:
        return
    _last_tick = now
    async_task(DRAIN_JOB)
    async_task(REAP_JOB)
    resume_due_tasks()


_last_tick = 0.0


def test_fifty_tasks_complete_with_no_duplicate_side_effect_while_workers_die(
    live_clusters,  # noqa: F811
    tmp_path,
):
    rng = random.Random(SEED)
    started = time.monotonic()
    with live_pipeline(tmp_path / "live") as pipeline:
        ids = pipeline.create_tasks(TASKS, title="Chaos feature")
        for task_id in ids:
            Notification.objects.enqueue(
                f"chaos:{task_id}",
                channel="teams",
                recipient="operators",
                subject=f"{task_id} queued",
                task=Task.objects.get(task_id=task_id),
            )
        env = pipeline.worker_env(workers=WORKERS, **RECOVERY_ENV)
        running = [live_clusters.start(env) for _ in range(CLUSTERS)]

        kills: list[str] = []
        while len(kills) < KILLS:
            time.sleep(rng.uniform(*KILL_EVERY))
            drive_schedules()
            if pipeline.statuses(ids)["completed"] == TASKS:
                break
            busy = busy_workers(running)
            if busy and rng.random() < 0.5:
                # One worker inside a step; its sentinel forks a new one.
                pid, _ = rng.choice(sorted(busy, key=lambda item: item[0]))
                os.kill(pid, signal.SIGKILL)
                kills.append("busy worker")
            else:
                victim = rng.choice(running)
                victim.kill()
                running.remove(victim)
                running.append(live_clusters.start(env, wait=False))
                kills.append("whole cluster")
        chaos_seconds = time.monotonic() - started

        counts = pipeline.wait_settled(
            ids, SETTLE_SECONDS, clusters=live_clusters, tick=drive_schedules
        )
        total_seconds = time.monotonic() - started
        forge = pipeline.forge_counts(ids)
        main_files = pipeline.main_files()
        # Anything still draining gets a last chance before the count.
        async_task(DRAIN_JOB)
        time.sleep(2)

    interrupted = AgentRun.objects.filter(task__task_id__in=ids).exclude(
        status__in=(RunStatus.SUCCEEDED,)
    )
    print(
        f"\nchaos: {len(kills)} kills in {chaos_seconds:.0f} s ({Counter(kills)}); "
        f"all settled after {total_seconds:.0f} s; {interrupted.count()} agent "
        f"runs did not succeed (cut short by a kill, or failed)"
    )

    # The kills hit work in progress, and the steps they stranded were taken
    # over once their lease expired.
    assert len(kills) == KILLS, f"only {len(kills)} kills before everything ended"
    assert interrupted.exists()
    assert Event.objects.filter(
        task__task_id__in=ids,
        kind=EventKind.LEASE,
        reason__startswith="took over the expired lease",
    ).exists()

    # 50/50 completed, each exactly once.
    assert counts == Counter({Status.COMPLETED: TASKS}), (
        counts,
        pipeline.not_completed(ids),
    )
    for task in Task.objects.filter(task_id__in=ids):
        assert completions(task) == 1, f"{task.task_id} completed {completions(task)}x"
        assert task.pr_merged

    # Each pull request opened once, merged once, one squash commit on main;
    # one comment on each issue; every feature on main.
    problems = {
        task_id: found
        for task_id, found in forge.items()
        if (
            found.pulls_opened,
            found.pulls_merged,
            found.squash_commits_on_main,
            found.issue_comments,
            found.issue_closed,
        )
        != (1, 1, 1, 1, True)
    }
    assert not problems, f"duplicated or missing forge side effects: {problems}"
    assert len(pipeline.main_messages()) == TASKS + 1  # the seed commit
    for task_id in ids:
        assert set(feature_files(task_id)) <= main_files

    # Notifications: none handed to the sender twice; a sent row was sent
    # once; a row a killed worker left `sending` at most once; none lost in
    # `pending` or `failed`.
    sent_lines = Counter(read_lines(str(tmp_path / "live" / "notifications.log")))
    assert not [n for n, times in sent_lines.items() if times > 1], sent_lines
    rows = dict(
        Notification.objects.filter(notification_id__startswith="chaos:").values_list(
            "notification_id", "status"
        )
    )
    assert len(rows) == TASKS
    for notification_id, status in rows.items():
        if status == NotificationStatus.SENT:
            assert sent_lines[notification_id] == 1, notification_id
        else:
            assert status == NotificationStatus.SENDING, (notification_id, status)
    assert set(sent_lines) <= set(rows)
