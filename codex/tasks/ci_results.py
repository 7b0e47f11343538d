"""The CI results of tasks waiting in implementation, read from the forge
after each repository's scheduled GitHub sync (registered with
codex.repositories.jobs from the tasks app's ready()).
"""

from __future__ import annotations

from codex.core.store import LeaseUnavailable, VersionConflict
from codex.core.workers import enqueue_on_commit
from codex.repositories.forge import get_forge
from codex.repositories.models import Repository
from codex.tasks.models import Phase, Status, Task


def refresh_ci_results(repository: Repository) -> dict[str, int]:
    """Check results of tasks waiting in implementation, from the forge (the
    webhook brings them sooner; this catches a missed delivery). A task whose
    CI settled gets `ci_passing` under its lease and its next step enqueued;
    a task a worker holds is left for the next round."""
    waiting = Task.objects.filter(
        repository=repository,
        status=Status.IN_PROGRESS,
        phase=Phase.IMPLEMENTATION,
        ci_passing__isnull=True,
    ).exclude(pr_url="")
    updated = {"passing": 0, "failing": 0}
    forge = None
    for task in waiting[:100]:
        if not task.commits:
            continue
        forge = forge or get_forge(repository)
        state = forge.checks_state(task.commits[-1])
        if state not in ("success", "failure"):
            continue  # pending, or no CI reported yet
        try:
            with task.leased("system:ci-sync", attempts=1):
                task.ci_passing = state == "success"
                task.save()
        except (LeaseUnavailable, VersionConflict):
            continue
        updated["passing" if task.ci_passing else "failing"] += 1
        enqueue_on_commit("codex.tasks.jobs.advance_task", task.task_id)
    return updated
