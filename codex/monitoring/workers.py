"""/healthz/workers: what each worker cluster reports of itself, and what
blocks the installation, as JSON."""

from __future__ import annotations

from typing import Any

from django.utils import timezone

from codex.core.workers import queue_snapshot
from codex.fleet.readiness import ERROR, beating_workers, installation_blockers


def worker_health() -> dict[str, Any]:
    """`status` ok (nothing blocks every task), degraded (a warning) or down;
    the blockers; each beating cluster with its last beat, its jail and model
    key as it reported them, and the jobs it took and runs."""
    now = timezone.now()
    workers = beating_workers(now)
    blockers = installation_blockers(workers)
    snapshot = queue_snapshot()
    levels = {blocker.level for blocker in blockers}
    status = "down" if ERROR in levels else "degraded" if levels else "ok"
    return {
        "status": status,
        "blockers": [
            {
                "code": blocker.code,
                "level": blocker.level,
                "message": blocker.message,
                "fix": blocker.fix,
            }
            for blocker in blockers
        ],
        "queue": {
            "waiting": snapshot.waiting,
            "oldest_age_seconds": round(snapshot.oldest_age_seconds(now), 1),
        },
        "workers": [
            {
                "cluster": worker.cluster.claim,
                "host": worker.cluster.host,
                "pid": worker.cluster.pid,
                "started_at": worker.cluster.started_at.isoformat(),
                "beat_at": worker.cluster.beat_at.isoformat(),
                "seconds_since_beat": round(
                    (now - worker.cluster.beat_at).total_seconds(), 1
                ),
                "health_at": worker.cluster.health_at.isoformat()
                if worker.cluster.health_at
                else None,
                "jail": worker.jail,
                "model_key": worker.has_model_key,
                "jobs_taken": snapshot.taken.get(worker.cluster.claim, 0),
                "jobs_running": snapshot.running.get(worker.cluster.claim, 0),
            }
            for worker in workers
        ],
    }
