"""Models of the claims app: issue claims, backlog runs, the board's items."""

from codex.claims.models.backlog import BacklogRun, BacklogState
from codex.claims.models.board import BoardItem, BoardStatus
from codex.claims.models.claim import (
    CLAIM_MAX_FAILURES,
    ClaimNotHeld,
    ClaimState,
    IssueClaim,
    claim_ttl,
)

__all__ = [
    "CLAIM_MAX_FAILURES",
    "BacklogRun",
    "BacklogState",
    "BoardItem",
    "BoardStatus",
    "ClaimNotHeld",
    "ClaimState",
    "IssueClaim",
    "claim_ttl",
]
