"""A worker killed while it waits for a job (it holds its cluster's task
queue's reader lock then) does not stop its cluster: the cluster keeper
releases the lock the dead worker held (codex.core.queue_lock), and the jobs
that come next run. Before, the other workers waited for that lock for ever
while the cluster beat on, its claimed job stuck."""

from __future__ import annotations

import os
import re
import signal

import pytest
from django_q.brokers.orm import ORM

from tests.factories import make_task
from tests.workers.live.cluster import wait_for, worker_env
from tests.workers.live.helpers import wait_completed

pytestmark = [
    pytest.mark.postgresql,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        not os.path.exists("/proc/self/syscall"), reason="needs /proc/<pid>/syscall"
    ),
]


def reading_worker(cluster) -> int | None:
    """The worker blocked in read(2): the one that waits for the next job
    holding the queue's reader lock (the others wait for the lock). Workers
    by django-q2's log line, not the monitor, which reads its own queue."""
    for pid in re.findall(r"ready for work at (\d+)", cluster.log()):
        try:
            with open(f"/proc/{pid}/syscall") as handle:
                if handle.read().split()[0] == "0":
                    return int(pid)
        except (OSError, IndexError):
            continue
    return None


def test_the_next_jobs_run_after_the_waiting_worker_is_killed(
    clusters, files, enqueue_via, tmp_path
):
    enqueue_via(ORM())
    cluster = clusters.start(worker_env(files, workers=2, var_dir=tmp_path))
    holder = wait_for(lambda: reading_worker(cluster), 30, "a worker waiting")
    os.kill(holder, signal.SIGKILL)

    task_ids = [make_task(title=f"After the kill {n}").task_id for n in range(3)]
    wait_completed(task_ids, clusters, cluster)
    assert "released the task queue's reader lock" in cluster.log()
