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
    from integrations.github.sync import sync_repository

    results: dict[str, Any] = {}
    for repository in Repository.objects.filter(forge=Forge.GITHUB).order_by("pk"):
        name = repository.full_name
        try:
            results[name] = sync_repository(repository)
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
