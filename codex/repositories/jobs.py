"""Worker entry points for repositories: the scheduled GitHub sync."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from codex.core.errors import Action, ClassifiedFailure
from codex.repositories.models import Forge, Repository

logger = logging.getLogger(__name__)

# Statuses whose wait_retry is GitHub's rate limit for the whole token: every
# further repository would be refused too, so the round stops there.
RATE_LIMIT_STATUSES = frozenset({403, 429})

# The scheduled GitHub sync names no app above the repositories app
# (docs/architecture.md#layer-debts): the apps register its work from their
# ready(). The GitHub app syncs a repository (its issue cache and the pull
# requests it saw) and answers what it did; what follows each repository's
# sync (the tasks app's CI results) answers under its name.
_GITHUB_SYNC: list[Callable[[Repository], dict[str, Any]]] = []  # the one
_AFTER_SYNC: dict[str, Callable[[Repository], Any]] = {}


def register_github_sync(sync: Callable[[Repository], dict[str, Any]]) -> None:
    """Have the scheduled sync call `sync(repository)` for each GitHub
    repository (its answer, JSON-ready, is the repository's result)."""
    _GITHUB_SYNC[:] = [sync]


def after_github_sync(name: str, step: Callable[[Repository], Any]) -> None:
    """Have the scheduled sync call `step(repository)` after each repository's
    sync, its answer kept in the repository's result under `name`."""
    _AFTER_SYNC[name] = step


def _sync(repository: Repository) -> dict[str, Any]:
    """One repository's sync and what follows it, as registered."""
    result = _GITHUB_SYNC[0](repository) if _GITHUB_SYNC else {}
    for name, step in _AFTER_SYNC.items():
        result[name] = step(repository)
    return result


def sync_github_repositories() -> dict[str, Any]:
    """Sync every GitHub repository's issue cache and pull request states.

    One failing repository does not stop the others; a rate limit stops the
    round (the next scheduled run continues). Returns the outcome per
    repository (JSON-ready, shown in the worker's task result).
    """
    results: dict[str, Any] = {}
    for repository in Repository.objects.filter(forge=Forge.GITHUB).order_by("pk"):
        name = repository.full_name
        try:
            results[name] = _sync(repository)
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
