"""Worker entry points for claims and backlog runs."""

from __future__ import annotations

import logging

from django_fsm import TransitionNotAllowed

from codex.claims.models import BacklogRun, IssueClaim
from codex.core.models import VersionConflict

logger = logging.getLogger(__name__)


def expire_stale_claims() -> int:
    """Scheduled: return claims past their TTL to unclaimed (DESIGN "expire stale
    claims"). Safe to run twice at once: a claim changed meanwhile is skipped."""
    return IssueClaim.objects.expire_stale()


def play_backlog_rounds() -> int:
    """Scheduled: play one round of every running or counting backlog run
    (spec 000's parallel agent manager); returns how many rounds were recorded.

    A run whose sessions are all busy, or whose round another worker is playing
    right now, records no round. A run an operator stopped meanwhile is skipped.
    One run's error does not keep the others from their round; it is raised
    afterwards so the worker records the job as failed.
    """
    played = 0
    errors: list[Exception] = []
    for run in BacklogRun.objects.active().select_related("repository"):
        try:
            outcome = run.play_round()
        except (TransitionNotAllowed, VersionConflict):
            # Stopped (or changed by an operator) while the round was played;
            # the round rolled back and the operator's change stands.
            continue
        except Exception as exc:  # noqa: BLE001 - re-raised after the loop
            logger.exception("%s: the backlog round failed", run)
            errors.append(exc)
            continue
        if outcome.played:
            played += 1
            logger.info(
                "%s: round %s started %d task(s), %d still active; now %s",
                run,
                run.rounds,
                len(outcome.tasks),
                outcome.active,
                outcome.state,
            )
    if errors:
        raise errors[0]
    return played


def follow_claims_on_board() -> dict[str, int]:
    """Scheduled: the project board follows the claims (spec 000 §3): an issue
    claimed by a session moves Todo → In Progress, a closed one → Done; each
    move is then pushed to GitHub at most once per status (perform_once).

    Reconciling instead of hooking every claim path keeps the board right
    however a claim changed (atomic bulk claiming, imports, the admin).
    """
    from codex.claims.models import BoardItem, BoardStatus, ClaimState

    moved = {"in_progress": 0, "done": 0, "pushed": 0}
    items = BoardItem.objects.exclude(status=BoardStatus.DONE).select_related(
        "project__repository"
    )
    for item in items:
        claim = IssueClaim.objects.filter(
            repository=item.project.repository_id, number=item.issue_number
        ).first()
        if claim is None:
            continue
        try:
            if claim.issue_closed and item.status == BoardStatus.IN_PROGRESS:
                item.perform("close", by="system:board", reason="issue closed")
                moved["done"] += 1
            elif claim.issue_closed and item.status == BoardStatus.TODO:
                item.perform("claim", by="system:board", reason="issue claimed")
                item.perform("close", by="system:board", reason="issue closed")
                moved["done"] += 1
            elif claim.state == ClaimState.CLAIMED and item.status == BoardStatus.TODO:
                item.perform("claim", by="system:board", reason="issue claimed")
                moved["in_progress"] += 1
            else:
                continue
        except (TransitionNotAllowed, VersionConflict):
            continue  # moved meanwhile; the next round looks again
        if item.project.repository.forge == "github":
            push_board_status(item)
            moved["pushed"] += 1
    return moved


def push_board_status(item) -> dict:
    """Show the item's status on GitHub, once per (item, status). Setting a
    field value twice is harmless, so an unfinished earlier attempt is simply
    repeated (the lookup cannot tell, and need not)."""
    from codex.core.side_effects import perform_once
    from integrations.github.projects import sync_board_item

    return perform_once(
        f"github:board:{item.item_id}:{item.status}",
        lambda: sync_board_item(item),
        lookup=lambda: None,
        kind="github",
    )
