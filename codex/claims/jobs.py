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
