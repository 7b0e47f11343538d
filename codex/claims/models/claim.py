"""Issue claims and their history (docs/domain/claims.md#claims)."""

from __future__ import annotations

from django.db import models
from django.db.models import Q
from django.utils import timezone
from django_fsm import FSMField, can_proceed, transition

from codex.claims.models.claim_queryset import IssueClaimQuerySet
from codex.claims.models.claim_state import (
    CLAIM_MAX_FAILURES,
    SYSTEM_ACTOR,
    ClaimNotHeld,
    ClaimState,
    claim_ttl,
    failure_limit_reached,
    is_claimable,
    is_stale,
    subject_for,
)
from codex.core.store import LoggedStateModel
from codex.events.models import EventKind


class IssueClaim(LoggedStateModel):
    """A session's lock on one GitHub issue (docs/domain/claims.md#claims), with
    its history.

    State::

        unclaimed ──claim──▶ claimed ──close──▶ released   (success: issue closed)
                               │  └──release──▶ released   (let go, still open)
                               └──fail──▶ failed ──(3 failures)──▶ blocked
        claimed | failed ──expire (TTL passed)──▶ unclaimed
        blocked ──unblock──▶ unclaimed          (operator; failures reset)
        unclaimed | failed | released ──block──▶ blocked  (operator)
        any but blocked ──release_deleted──▶ released  (the issue was deleted)

    A claim holds for the TTL (CODEX_CLAIM_TTL_MINUTES, 30 min by default) from
    `claimed_at`; a failed claim cools down for one TTL from `failed_at`. Past
    `expires_at` the claim is stale and any session may take it (claim_next
    does so directly; `expire` makes it visible as unclaimed). The third
    failure blocks the issue until an operator unblocks it.

    History (docs/domain/claims.md#claim-ttl): `total_attempts`, `successful_closes`,
    `failure_reasons`, `last_session` accumulate over every attempt, including
    attempts imported from `.issue_claims.json`.
    """

    repository = models.ForeignKey(
        "repositories.Repository",
        on_delete=models.PROTECT,
        related_name="issue_claims",
    )
    number = models.PositiveIntegerField("issue number")
    title = models.CharField(max_length=300, blank=True)
    state_field = "state"
    state = FSMField(
        max_length=20,
        choices=ClaimState.choices,
        default=ClaimState.UNCLAIMED,
        protected=True,
    )
    claimed_by = models.CharField(
        "session", max_length=200, blank=True, help_text="Session or run id."
    )
    claimed_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    failure_count = models.PositiveSmallIntegerField(default=0)
    failed_at = models.DateTimeField(null=True, blank=True)
    issue_closed = models.BooleanField(
        default=False, help_text="A session closed the issue; nobody claims it again."
    )
    total_attempts = models.PositiveIntegerField(default=0)
    successful_closes = models.PositiveIntegerField(default=0)
    failure_reasons = models.JSONField(default=list, blank=True)
    last_session = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    objects = IssueClaimQuerySet.as_manager()

    event_kind = EventKind.CLAIM

    class Meta:
        ordering = ["repository", "number"]
        constraints = [
            models.UniqueConstraint(
                fields=["repository", "number"], name="claim_one_per_issue"
            ),
            models.CheckConstraint(
                condition=Q(number__gte=1), name="claim_issue_number_positive"
            ),
        ]
        indexes = [
            models.Index(
                fields=["repository", "state", "number"], name="claim_repo_state"
            ),
            models.Index(fields=["state", "expires_at"], name="claim_expiry"),
        ]

    def __str__(self) -> str:
        return f"{self.repository}#{self.number}"

    @property
    def event_subject(self) -> str:
        return subject_for(self.repository, self.number)

    @property
    def stale(self) -> bool:
        """Past its TTL (see `is_stale`)."""
        return self.state in (ClaimState.CLAIMED, ClaimState.FAILED) and is_stale(self)

    def _check_holder(self, session_id: str | None) -> None:
        if session_id is not None and session_id != self.claimed_by:
            raise ClaimNotHeld(
                f"{self} is claimed by {self.claimed_by!r}, not {session_id!r}"
            )

    def after_transition(self, name: str, *, by: str) -> None:
        """The failure that reaches the limit blocks the claim at once."""
        if name == "fail" and failure_limit_reached(self) and can_proceed(self.block):
            self.block(
                by=SYSTEM_ACTOR,
                reason=f"{self.failure_count} failures "
                f"(blocked at {CLAIM_MAX_FAILURES})",
            )

    # -- transitions ------------------------------------------------------------

    @transition(
        field=state,
        source=[
            ClaimState.UNCLAIMED,
            ClaimState.RELEASED,
            ClaimState.CLAIMED,
            ClaimState.FAILED,
        ],
        target=ClaimState.CLAIMED,
        conditions=[is_claimable],
        custom={"admin": False},
    )
    def claim(self, *, session_id: str, by: str, reason: str = "claimed") -> None:
        """`session_id` takes the issue for one TTL. Sessions use
        IssueClaim.objects.claim_next/claim, which do this atomically."""
        if not session_id:
            raise ValueError(
                "a claim needs a session id (docs/domain/claims.md#claims)"
            )
        now = timezone.now()
        self.claimed_by = session_id
        self.claimed_at = now
        self.expires_at = now + claim_ttl()
        self.total_attempts += 1
        self.last_session = session_id

    @transition(
        field=state,
        source=ClaimState.CLAIMED,
        target=ClaimState.RELEASED,
        custom={"admin": False},
    )
    def close(
        self,
        *,
        by: str,
        reason: str = "issue closed",
        session_id: str | None = None,
    ) -> None:
        """Success: the session closed the issue."""
        self._check_holder(session_id)
        self.issue_closed = True
        self.successful_closes += 1
        self.expires_at = None

    @transition(
        field=state,
        source=ClaimState.CLAIMED,
        target=ClaimState.RELEASED,
        custom={"label": "Release claim"},
    )
    def release(
        self,
        *,
        by: str,
        reason: str = "claim released",
        session_id: str | None = None,
    ) -> None:
        """Let the issue go without closing it; any session may claim it again."""
        self._check_holder(session_id)
        self.expires_at = None

    @transition(
        field=state,
        source=[
            ClaimState.UNCLAIMED,
            ClaimState.CLAIMED,
            ClaimState.FAILED,
            ClaimState.RELEASED,
        ],
        target=ClaimState.RELEASED,
        custom={"admin": False},
    )
    def release_deleted(
        self, *, by: str, reason: str = "the issue was deleted"
    ) -> None:
        """The issue is gone from GitHub: let go of it for good. Not a failure
        of the session (nothing counts towards blocking) and never claimable
        again (`issue_closed`: there is nothing left to work on)."""
        self.issue_closed = True
        self.expires_at = None

    @transition(
        field=state,
        source=ClaimState.CLAIMED,
        target=ClaimState.FAILED,
        custom={"label": "Record a failure"},
    )
    def fail(
        self,
        *,
        by: str,
        reason: str = "attempt failed",
        session_id: str | None = None,
    ) -> None:
        """The attempt failed: count it; retry after one TTL; the third blocks."""
        self._check_holder(session_id)
        now = timezone.now()
        self.failure_count += 1
        self.failed_at = now
        self.expires_at = now + claim_ttl()
        self.failure_reasons = [*self.failure_reasons, reason]

    @transition(
        field=state,
        source=[ClaimState.UNCLAIMED, ClaimState.FAILED, ClaimState.RELEASED],
        target=ClaimState.BLOCKED,
        custom={"label": "Block"},
    )
    def block(self, *, by: str, reason: str = "blocked by an operator") -> None:
        """Nobody claims the issue until an operator unblocks it."""
        self.expires_at = None

    @transition(
        field=state,
        source=ClaimState.BLOCKED,
        target=ClaimState.UNCLAIMED,
        custom={"label": "Unblock"},
    )
    def unblock(self, *, by: str, reason: str = "unblocked by an operator") -> None:
        """Claimable again, with a fresh failure budget (the history keeps the
        old failure reasons)."""
        self.failure_count = 0
        self.failed_at = None
        self.claimed_by = ""
        self.expires_at = None

    @transition(
        field=state,
        source=[ClaimState.CLAIMED, ClaimState.FAILED],
        target=ClaimState.UNCLAIMED,
        conditions=[is_stale],
        custom={"label": "Expire (TTL passed)"},
    )
    def expire(self, *, by: str, reason: str = "TTL passed") -> None:
        """The TTL passed: the claim is stale and the issue free again."""
        self.claimed_by = ""
        self.expires_at = None
