"""The pull requests of agent instances waiting on theirs (pr_created), moved
on by what the GitHub sync saw (codex.github.sync, which calls
`reconcile_pull_requests` for each repository it syncs: registered from the
fleet's ready()).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from django_fsm import TransitionNotAllowed

from codex.core.store import VersionConflict
from codex.fleet.models import AgentInstance
from codex.fleet.models.choices import InstanceStatus

if TYPE_CHECKING:
    from github import Github

    from codex.repositories.models import Repository

logger = logging.getLogger(__name__)

SYNC_ACTOR = "github-sync"


def _pull_request_outcome(state: str, merged: bool) -> str | None:
    """The instance transition a pull request's state calls for, if any."""
    if state != "closed":
        return None
    return "merged" if merged else "closed"


def _apply_outcome(instance: AgentInstance, outcome: str) -> bool:
    try:
        instance.perform(
            outcome, by=SYNC_ACTOR, reason=f"pull request {outcome} (GitHub sync)"
        )
    except (TransitionNotAllowed, VersionConflict):
        # A webhook or another sync got there first: nothing left to do.
        logger.info("instance %s already moved on", instance)
        return False
    return True


def reconcile_pull_requests(
    repository: Repository,
    seen: dict[int, dict[str, Any]],
    *,
    ask_each: bool,
    client: Github | None,
) -> dict[str, list[int]]:
    """Merge or close the instances of `repository` waiting on a pull request
    that `seen` (GitHub's items by number) shows closed; with `ask_each`, the
    others are asked for one by one. Answers the pull request numbers moved,
    by outcome."""
    # Imported here so that the fleet's ready() never imports PyGithub in
    # processes that only need the local forge.
    from integrations.github.sync import pull_request_state

    moved: dict[str, list[int]] = {"merged": [], "closed": []}
    waiting = AgentInstance.objects.filter(
        repository=repository,
        status=InstanceStatus.PR_CREATED,
        pr_number__isnull=False,
    )
    for instance in waiting:
        item = seen.get(instance.pr_number)
        if item is not None:
            merged = bool((item.get("pull_request") or {}).get("merged_at"))
            outcome = _pull_request_outcome(item["state"], merged)
        elif ask_each:
            state, merged = pull_request_state(
                repository.full_name, instance.pr_number, client=client
            )
            outcome = _pull_request_outcome(state, merged)
        else:
            continue  # unchanged since the cursor, so still open
        if outcome and _apply_outcome(instance, outcome):
            moved[outcome].append(instance.pr_number)
    return moved
