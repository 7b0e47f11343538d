"""The worker queue's results of successful jobs, kept for the console's
"Successful jobs" list and pruned by a scheduled job.

django-q2 can prune them itself (Q_CLUSTER `save_limit` above 0), but it does
so on every job's save, by reading and locking every saved result: 40 ms of
CPU per job with 1,000 kept (measured on PostgreSQL), a cost that grows with
the history and is paid by the step that just finished. Codex sets
`save_limit` to 0 (keep, do not prune) and `prune_job_results` keeps the newest
CODEX_JOB_RESULTS_KEPT in one statement every few minutes. Failed jobs are
never pruned here: an operator reads and deletes them.

The jobs of CODEX_JOB_RESULTS_UNSAVED (the progress comment's edits, several
per task) keep no result when they succeed: it would crowd the steps' results
(an operator reads "busy" or the state a step left there) out of the kept
ones, and saving it costs the cluster's monitor four statements per job. Their
failures are saved like any other.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings


def prune_job_results() -> int:
    """Scheduled job: delete the successful jobs' results beyond the newest
    CODEX_JOB_RESULTS_KEPT. Returns how many went."""
    from django_q.models import Success

    kept = int(getattr(settings, "CODEX_JOB_RESULTS_KEPT", 1000))
    newest = Success.objects.order_by("-stopped", "-id").values("id")[:kept]
    deleted, _ = Success.objects.exclude(id__in=newest).delete()
    return deleted


def leave_success_unsaved(sender: Any, task: dict | None = None, **kwargs: Any) -> None:
    """django-q's pre_execute, in the worker: a job of CODEX_JOB_RESULTS_UNSAVED
    tells the monitor not to save its result if it succeeds (the package's
    `save`, which django-q2 reads for successes only)."""
    unsaved = getattr(settings, "CODEX_JOB_RESULTS_UNSAVED", ())
    if task is not None and task.get("func") in unsaved:
        task["save"] = False
