"""A claim's states, its TTL and the rules on them: what a session may
claim, when a claim is stale, when failures block the issue
(docs/domain/claims.md#claims)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from django.db import models
from django.db.models import Q
from django.utils import timezone

if TYPE_CHECKING:
    from codex.claims.models.claim import IssueClaim
    from codex.repositories.models import Repository

# Three failures block the issue (docs/domain/claims.md#claim-ttl).
CLAIM_MAX_FAILURES = 3
SYSTEM_ACTOR = "codex:claims"


def claim_ttl() -> timedelta:
    """How long a claim holds (docs/domain/claims.md#claim-ttl, 30 min by default).

    Read on every call (configuration claims.ttl_minutes: the database, then
    CODEX_CLAIM_TTL_MINUTES, then 30) so that a change applies at once.
    """
    from codex.configuration.config import get_config

    return timedelta(minutes=get_config("claims.ttl_minutes"))


class ClaimState(models.TextChoices):
    UNCLAIMED = "unclaimed", "Unclaimed"
    CLAIMED = "claimed", "Claimed"
    FAILED = "failed", "Failed"
    BLOCKED = "blocked", "Blocked"
    RELEASED = "released", "Released"


class ClaimNotHeld(Exception):
    """A session tried to finish a claim that another session holds."""


def claimable(now: datetime) -> Q:
    """Rows a session may claim at `now`: free ones and stale ones.

    A failed claim waits out its TTL before it is retried (failed becomes
    unclaimed when the TTL expires); a claimed one past its TTL was
    abandoned ("Claims older than TTL ... are considered stale").
    """
    return (
        Q(state=ClaimState.UNCLAIMED)
        | Q(state=ClaimState.RELEASED, issue_closed=False)
        | Q(state__in=[ClaimState.CLAIMED, ClaimState.FAILED], expires_at__lte=now)
    )


def subject_for(repository: Repository, number: int) -> str:
    """The event log subject of a claim: "claim:<owner/name>#<number>"."""
    return f"claim:{repository.full_name}#{number}"


# -- guards ---------------------------------------------------------------------


def is_stale(claim: IssueClaim) -> bool:
    """The claim's TTL has run out (claimed: abandoned; failed: cooled down)."""
    return claim.expires_at is not None and claim.expires_at <= timezone.now()


def is_claimable(claim: IssueClaim) -> bool:
    """Free, released with the issue still open, or claimed/failed and stale."""
    if claim.state == ClaimState.UNCLAIMED:
        return True
    if claim.state == ClaimState.RELEASED:
        return not claim.issue_closed
    return is_stale(claim)


def failure_limit_reached(claim: IssueClaim) -> bool:
    """Three failures block the issue (docs/domain/claims.md#claim-ttl)."""
    return claim.failure_count >= CLAIM_MAX_FAILURES
