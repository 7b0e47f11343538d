"""A worker killed while it waits for a job (it holds its cluster's task
queue's reader lock then) does not stop its cluster: the cluster keeper
releases the lock the dead worker held (codex.core.workers.queue_lock), and the jobs
that come next run. Before, the other workers waited for that lock for ever
while the cluster beat on, its claimed job stuck. The same for the monitor,
the result queue's one reader: killed while it waits, the one started in its
place gets the results, and the jobs are acknowledged (their rows go)."""

from __future__ import annotations

import os
import re
import signal

import pytest
from django_q.brokers.orm import ORM
from django_q.models import OrmQ

from codex.core.workers.queue_lock import read_syscall
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


def reading(cluster, pattern: str) -> int | None:
    """The process named by django-q2's log line `pattern` blocked in read(2):
    a worker that waits for the next job holding the queue's reader lock (the
    others wait for the lock), or the monitor waiting for a result."""
    for pid in re.findall(pattern, cluster.log()):
        try:
            with open(f"/proc/{pid}/syscall") as handle:
                if handle.read().split()[0] == read_syscall():
                    return int(pid)
        except (OSError, IndexError):
            continue
    return None


# Who waits in read(2) holding a queue's reader lock, by django-q2's log
# line, and the queue whose lock the keeper releases after it is killed.
WAITERS = {
    "worker": (r"ready for work at (\d+)", "task"),
    "monitor": (r"monitoring at (\d+)", "result"),
}


@pytest.mark.parametrize("waiter", sorted(WAITERS))
def test_the_jobs_run_and_are_acknowledged_after_a_waiting_process_is_killed(
    waiter, clusters, files, enqueue_via, tmp_path
):
    pattern, queue = WAITERS[waiter]
    enqueue_via(ORM())
    cluster = clusters.start(worker_env(files, workers=2, var_dir=tmp_path))
    holder = wait_for(lambda: reading(cluster, pattern), 30, f"a {waiter} waiting")
    os.kill(holder, signal.SIGKILL)

    task_ids = [make_task(title=f"After the kill {n}").task_id for n in range(3)]
    wait_completed(task_ids, clusters, cluster)
    wait_for(lambda: not OrmQ.objects.exists(), 30, "every job acknowledged")
    assert f"released the {queue} queue's reader lock" in cluster.log()
