"""A cluster that is killed every 10 s still runs its recovery, on both
brokers with the default settings.

django-q2 runs its first schedule about 30 s after a cluster starts, so a
cluster dying faster than that used to run no reaper, no resume and no outbox
job, and what each incarnation held waited for CODEX_JOB_RETRY. Each start-up
now hands back what the previous incarnation held and runs the due schedules
before it forks its workers (codex.core.workers.cluster_recovery), so work keeps
moving through the crash loop: steps cut short start again in the next
incarnation, a blocked task whose retry time came is resumed by its schedule,
and once the loop ends every task completes, each side effect made once.

CI runs a 30-second loop; CODEX_LONG_TESTS=1 runs the full two minutes.
"""

from __future__ import annotations

import os
import time
from datetime import timedelta

import pytest
from django.utils import timezone
from django_q.models import Schedule

from codex.tasks.models import Status, Task
from tests.factories import make_task, put_in_state
from tests.workers.live.brokers import default_env, held
from tests.workers.live.cluster import wait_for
from tests.workers.live.helpers import all_completed, assert_side_effects_once

pytestmark = [pytest.mark.postgresql, pytest.mark.django_db(transaction=True)]

LOOP_SECONDS = 120 if os.environ.get("CODEX_LONG_TESTS") == "1" else 30
KILL_EVERY = 10
RESUME = "codex.tasks.jobs.resume_due_tasks"
SCHEDULE = "resume due tasks"
# Enough work to keep both workers busy through the whole loop.
TASKS = LOOP_SECONDS * 2 // 5


def test_a_cluster_killed_every_10_s_still_runs_its_recovery(
    clusters, files, broker, tmp_path
):
    kind, _, client = broker
    env = default_env(
        files, tmp_path, kind, workers=2, sleep_seconds=6, sleep_where="action"
    )
    task_ids = [make_task(title=f"Crash loop {n}").task_id for n in range(TASKS)]
    # A task whose retry time has come: only the resume schedule moves it.
    waiting = make_task(title="Blocked, retry due")
    put_in_state(
        waiting,
        status=Status.BLOCKED,
        blocked_reason="a transient failure",
        blocked_until=timezone.now() - timedelta(seconds=1),
    )
    Schedule.objects.create(
        name=SCHEDULE,
        func=RESUME,
        schedule_type=Schedule.MINUTES,
        minutes=1,
        repeats=-1,
        next_run=timezone.now() - timedelta(seconds=1),
    )

    kills: list[float] = []
    incarnations = []
    resumed_during_loop = False
    loop_end = time.monotonic() + LOOP_SECONDS
    while time.monotonic() < loop_end:
        cluster = clusters.start(env)
        incarnations.append((cluster, held(kind, client)))
        time.sleep(KILL_EVERY)
        resumed_during_loop |= Task.objects.get(pk=waiting.pk).status != Status.BLOCKED
        cluster.kill()
        kills.append(time.time())
    assert len(kills) >= LOOP_SECONDS // (KILL_EVERY + 5)

    # Each incarnation that found jobs held by the one before handed them back
    # at its start-up.
    for cluster, held_at_start in incarnations[1:]:
        if held_at_start:
            assert "of dead clusters" in cluster.log(), cluster.log_tail()
    assert resumed_during_loop, "the resume schedule never ran in the loop"
    # Work moved through the loop: steps were cut short by the kills, ran
    # again in the next incarnation, and others finished, while work was
    # still waiting when the loop ended.
    runs = files.runs()
    assert sum(1 for run in runs if run["end"] is None) >= len(kills) - 1
    assert sum(1 for run in runs if run["end"]) >= 4 * len(kills)
    assert not all_completed(task_ids), "the loop was not under load"
    # The schedule fired at the start-ups where it was due (once a minute;
    # django-q2's own first tick, 30 s in, never came), though its job may
    # still wait behind the tasks' steps.
    logs = [cluster.log() for cluster, _ in incarnations]
    fired = sum(log.count(f"from schedule [{SCHEDULE}]") for log in logs)
    assert fired >= 1 + LOOP_SECONDS // 70, fired

    last = clusters.start(env)
    wait_for(
        lambda: all_completed([*task_ids, waiting.task_id]),
        90,
        "every task to complete after the crash loop",
        clusters=clusters,
        while_alive=[last],
    )
    assert_side_effects_once(files, [*task_ids, waiting.task_id])
    assert_no_overlap(files.runs(), kills)


def assert_no_overlap(runs: list[dict], kills: list[float]) -> None:
    """No two runs of one task overlapped; a run cut short by a kill (no end)
    ended at the first kill after its start."""
    by_task: dict[str, list[tuple[float, float]]] = {}
    for run in runs:
        end = run["end"] or min(t for t in kills if t >= run["start"])
        by_task.setdefault(run["task"], []).append((run["start"], end))
    for task_id, spans in by_task.items():
        spans.sort()
        for (_, end), (start, _) in zip(spans, spans[1:], strict=False):
            assert start >= end, f"{task_id}: two runs overlapped"
