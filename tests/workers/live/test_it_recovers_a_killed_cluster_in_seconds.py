"""A whole cluster killed with a full buffer, on either broker, with the
default timeouts and leases: every task it held moves again within seconds.

The killed cluster holds running steps (its workers are inside a phase) and
steps it took but has not started (django-q2's memory queue and the pusher's
hand). Before, those waited for CODEX_JOB_RETRY (ORM) or were lost (Redis).
The brokers now claim each job they take (codex.core.workers.brokers), and a cluster
starting on the same machine, or one already running there, hands the dead
cluster's jobs back at once after freeing its workers' task leases
(codex.core.workers.cluster_recovery). The defaults are used: a 60 s lease, a 20-minute
job retry.
"""

from __future__ import annotations

import time

import pytest

from tests.factories import make_task
from tests.workers.live.brokers import default_env
from tests.workers.live.brokers import held as _held
from tests.workers.live.cluster import wait_for
from tests.workers.live.helpers import (
    all_completed,
    assert_no_concurrent_runs,
    assert_side_effects_once,
    completions,
)

pytestmark = [pytest.mark.postgresql, pytest.mark.django_db(transaction=True)]

MOVING_WITHIN = 90


@pytest.mark.parametrize("takeover", ["restart", "survivor"])
def test_a_cluster_killed_with_a_full_buffer_has_every_task_moving_within_90_s(
    clusters, files, broker, tmp_path, takeover
):
    kind, _, client = broker
    env = default_env(
        files, tmp_path, kind, workers=2, sleep_seconds=4, sleep_where="action"
    )
    first = clusters.start(env)
    # Two workers and a queue limit of one: two running, one in the memory
    # queue, one in the pusher's hand.
    task_ids = [make_task(title=f"Buffered {n}").task_id for n in range(6)]
    wait_for(
        lambda: len(files.side_effect_lines()) >= 2 and _held(kind, client) >= 3,
        60,
        "both workers inside a phase and a job buffered",
        clusters=clusters,
        while_alive=[first],
    )
    survivor = clusters.start(env) if takeover == "survivor" else None
    held = _held(kind, client)
    first.kill()
    killed_at = time.time()
    assert held >= 3, f"the cluster held {held} jobs"

    second = survivor or clusters.start(env)
    moving = time.monotonic()
    # Every task moves: all of them complete, the killed ones re-run.
    wait_for(
        lambda: all_completed(task_ids),
        MOVING_WITHIN + 60,
        "every task to complete after the kill",
        clusters=clusters,
        while_alive=[second],
    )
    # Each task the dead cluster was running started again within 90 s.
    killed_runs = [run for run in files.runs() if run["end"] is None]
    assert killed_runs, "the kill cut runs short"
    for dead in killed_runs:
        again = [
            run["start"]
            for run in files.runs()
            if run["task"] == dead["task"]
            and run["phase"] == dead["phase"]
            and run["start"] > killed_at
        ]
        assert again and min(again) - killed_at < MOVING_WITHIN, dead
    assert time.monotonic() - moving < MOVING_WITHIN + 60
    # The clean-up jobs of the completed tasks run last; then nothing is held.
    wait_for(lambda: _held(kind, client) == 0, 20, "no claim left behind")
    for task_id in task_ids:
        assert completions_of(task_id) == 1
    assert_side_effects_once(files, task_ids)
    assert_no_concurrent_runs(files, killed_at)


def completions_of(task_id: str) -> int:
    from codex.tasks.models import Task

    return completions(Task.objects.get(task_id=task_id))


def test_a_graceful_stop_under_load_hands_every_step_over_within_30_s(
    clusters, files, broker, tmp_path
):
    kind, _, client = broker
    # Steps far longer than the stop's grace: without a hand-over the tasks
    # would wait for the steps to end, or for the lease after a SIGKILL.
    env = default_env(
        files, tmp_path, kind, workers=2, sleep_seconds=60, sleep_where="action"
    )
    first = clusters.start(env)
    task_ids = [make_task(title=f"Redeploy {n}").task_id for n in range(4)]
    wait_for(
        lambda: len(files.side_effect_lines()) >= 2,
        60,
        "both workers inside a long phase",
        clusters=clusters,
        while_alive=[first],
    )
    # The cluster the work moves to has room for it beside its own load.
    second = clusters.start({**env, "CODEX_WORKERS": "4"})
    others = set(cluster_pids(second))
    first.stop(timeout=60)
    stopped_at = time.time()
    assert not first.killed, "the cluster stopped by itself, within the grace"
    # It handed its running steps back itself, not left them to a sweep.
    assert "stopping: handed back 2 running job(s)" in first.log(), first.log_tail()

    # Every task cut short by the stop starts again on the other cluster
    # within 30 s of the SIGTERM; none idles longer.
    cut = [
        run for run in files.runs() if run["end"] is None and run["pid"] not in others
    ]
    assert len(cut) == 2
    wait_for(
        lambda: all(
            any(
                run["task"] == dead["task"] and run["start"] > dead["start"]
                for run in files.runs()
            )
            for dead in cut
        ),
        30 - (time.time() - stopped_at),
        "the stopped steps to start again",
        clusters=clusters,
        while_alive=[second],
    )
    assert {run["pid"] for run in files.runs() if run["start"] > stopped_at} <= set(
        cluster_pids(second)
    )
    assert task_ids


def cluster_pids(cluster) -> list[int]:
    """The pids of a cluster's processes (its session)."""
    import subprocess

    out = subprocess.run(
        ["ps", "-o", "pid=", "-s", str(cluster.pid)],
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    return [int(pid) for pid in out.split()]
