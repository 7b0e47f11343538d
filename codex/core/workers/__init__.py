"""The worker runtime over django-q2: jobs enqueued by id once their
transaction commits, the brokers that remember which cluster took a job,
the recovery of what a dead worker, cluster or machine held, the supervisor
that forks clusters warm, and the scheduled jobs (docs/architecture.md).
This is its front door: the apps import these names from here, never from
its modules (the settings name the brokers by their path).
"""

from codex.core.workers.clusters import WorkerCluster
from codex.core.workers.hooks import on_dead_worker, on_given_up_job, on_warm_up
from codex.core.workers.job_results import prune_job_results
from codex.core.workers.queue import (
    broker_after_commit,
    enqueue_not_before,
    enqueue_on_commit,
    job_handed_back,
    job_row,
)
from codex.core.workers.schedules import seed_schedules, unseed_schedules
from codex.core.workers.snapshot import queue_snapshot

__all__ = [
    "WorkerCluster",
    "broker_after_commit",
    "enqueue_not_before",
    "enqueue_on_commit",
    "job_handed_back",
    "job_row",
    "on_dead_worker",
    "on_given_up_job",
    "on_warm_up",
    "prune_job_results",
    "queue_snapshot",
    "seed_schedules",
    "unseed_schedules",
]
