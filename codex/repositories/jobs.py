"""Worker entry points for repositories: the scheduled GitHub sync."""

from __future__ import annotations

import logging
from typing import Any

from codex.core.errors import Action, ClassifiedFailure
from codex.repositories.models import Forge, Repository

logger = logging.getLogger(__name__)

# Statuses whose wait_retry is GitHub's rate limit for the whole token: every
# further repository would be refused too, so the round stops there.
RATE_LIMIT_STATUSES = frozenset({403, 429})


def sync_github_repositories() -> dict[str, Any]:
    """Sync every GitHub repository's issue cache and pull request states.

    One failing repository does not stop the others; a rate limit stops the
    round (the next scheduled run continues). Returns the outcome per
    repository (JSON-ready, shown in the worker's task result).
    """
    # Imported here so that loading this module never imports PyGithub in
    # processes that only need the local forge.
    from codex.github.sync import sync_repository

    results: dict[str, Any] = {}
    for repository in Repository.objects.filter(forge=Forge.GITHUB).order_by("pk"):
        name = repository.full_name
        try:
            results[name] = sync_repository(repository)
            results[name]["ci"] = refresh_ci_results(repository)
        except ClassifiedFailure as failure:
            logger.warning("GitHub sync of %s failed: %s", name, failure)
            results[name] = {"error": failure.error.as_dict()}
            if (
                failure.error.action is Action.WAIT_RETRY
                and failure.error.code in RATE_LIMIT_STATUSES
            ):
                results["stopped"] = {"retry_after": failure.error.retry_after}
                break
        except Exception as exc:  # noqa: BLE001 - isolate one repository's bug
            logger.exception("GitHub sync of %s failed unexpectedly", name)
            results[name] = {"error": {"message": repr(exc)}}
    return results


def refresh_ci_results(repository: Repository) -> dict[str, int]:
    """Check results of tasks waiting in implementation, from the forge (the
    webhook brings them sooner; this catches a missed delivery). A task whose
    CI settled gets `ci_passing` under its lease and its next step enqueued;
    a task a worker holds is left for the next round."""
    from codex.core.store import LeaseUnavailable, VersionConflict
    from codex.core.workers import enqueue_on_commit
    from codex.repositories.forge import get_forge
    from codex.tasks.models import Phase, Status, Task

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
