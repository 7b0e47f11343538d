"""`manage.py codex_workers --clusters N` (codex.core.workers.supervisor): N clusters
forked from one prepared process; a cluster whose whole process group is
killed is forked again at once, and its jobs run; SIGTERM stops every
cluster and then the supervisor."""

from __future__ import annotations

import os
import signal

import pytest
from django_q.brokers.orm import ORM

from tests.factories import make_task
from tests.workers.live.cluster import (
    process_group,
    wait_for,
    worker_env,
)
from tests.workers.live.helpers import wait_completed

pytestmark = [pytest.mark.postgresql, pytest.mark.django_db(transaction=True)]


def command_line(pid: int) -> bytes:
    with open(f"/proc/{pid}/cmdline", "rb") as handle:
        return handle.read()


def test_a_killed_cluster_is_forked_again_and_its_jobs_run(
    clusters, files, enqueue_via, tmp_path
):
    enqueue_via(ORM())
    env = worker_env(files, workers=1, var_dir=tmp_path)
    supervisor = clusters.start(env, supervised=2)
    first = sorted(supervisor.supervised_groups())
    assert len(first) == 2
    for group in first:
        # Forked, not started anew: the supervisor's own command line, and a
        # session of its own (a signal to one cluster reaches no other).
        assert command_line(group) == command_line(supervisor.pid)
        assert process_group(group) == group != process_group(supervisor.pid)

    os.killpg(first[0], signal.SIGKILL)

    def replaced() -> set[int] | None:
        groups = set(supervisor.supervised_groups())
        return groups if len(groups) == 2 and groups != set(first) else None

    groups = wait_for(
        replaced,
        30,
        "a cluster in the dead one's place",
        clusters=clusters,
        while_alive=[supervisor],
    )
    assert first[1] in groups and first[0] not in groups
    supervisor.wait_running(clusters=3)  # the two first, and the new one

    task_ids = [make_task(title=f"Supervised {n}").task_id for n in range(3)]
    wait_completed(task_ids, clusters, supervisor)


def test_sigterm_stops_every_cluster_then_the_supervisor(clusters, files, tmp_path):
    supervisor = clusters.start(
        worker_env(files, workers=1, var_dir=tmp_path), supervised=2
    )
    groups = supervisor.supervised_groups()
    os.kill(supervisor.pid, signal.SIGTERM)
    assert supervisor.process.wait(timeout=60) == 0
    for group in groups:
        with pytest.raises(ProcessLookupError):
            os.killpg(group, 0)  # nobody left in it
    log = supervisor.log()
    assert log.count("has stopped.") == 2  # each cluster stopped gracefully
    assert "all clusters stopped" in log


def test_no_cluster_outlives_a_killed_supervisor(clusters, files, tmp_path):
    supervisor = clusters.start(
        worker_env(files, workers=1, var_dir=tmp_path), supervised=2
    )
    groups = supervisor.supervised_groups()
    os.kill(supervisor.pid, signal.SIGKILL)  # no chance to stop its clusters

    def left() -> list[int]:
        return [pid for pid in groups if process_group(pid) is not None]

    # PR_SET_PDEATHSIG: each cluster gets SIGTERM and stops by itself.
    wait_for(lambda: not left(), 60, "the orphaned clusters to stop")
    assert supervisor.log().count("has stopped.") == 2


def test_a_cluster_that_fails_to_start_is_started_again_after_a_pause(
    clusters, files, tmp_path
):
    env = worker_env(files, workers=1, var_dir=tmp_path)
    # The workers' database is unreachable: every cluster ends at its start.
    env["DATABASE_URL"] = "postgres://postgres@127.0.0.1:1/none"
    supervisor = clusters.start(env, wait=False, supervised=1)
    wait_for(
        lambda: supervisor.log().count("another starts in") >= 2,
        60,
        "two failed starts",
        clusters=clusters,
        while_alive=[supervisor],
    )
    pauses = [
        line.rsplit("another starts in ", 1)[1]
        for line in supervisor.log().splitlines()
        if "another starts in" in line
    ]
    assert pauses[:2] == ["1 s", "2 s"]
