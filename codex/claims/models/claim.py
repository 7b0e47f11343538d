"""Issue claims and their history (docs/domain/claims.md#claims)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from django.db import models, transaction
from django.db.models import F, Q
from django.utils import timezone
from django_fsm import FSMField, can_proceed, transition

from codex.core.logged_state import LoggedStateModel
from codex.core.models import VersionConflict, VersionedQuerySet
from codex.events.models import Event, EventKind

if TYPE_CHECKING:
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


# -- queries and atomic claiming ---------------------------------------------------


class IssueClaimQuerySet(VersionedQuerySet):
    """Claims; `claim_next` and `claim` are the only ways sessions take them."""

    protected_update_fields = frozenset({"state"})

    def claimable(self, now: datetime | None = None) -> IssueClaimQuerySet:
        """Claims a session could take now."""
        return self.filter(claimable(now or timezone.now()))

    def stale(self, now: datetime | None = None) -> IssueClaimQuerySet:
        """Claimed or failed claims past their TTL."""
        return self.filter(
            state__in=[ClaimState.CLAIMED, ClaimState.FAILED],
            expires_at__lte=now or timezone.now(),
        )

    def claim_next(
        self,
        repository: Repository,
        session_id: str,
        *,
        limit: int = 1,
        by: str = "",
        now: datetime | None = None,
    ) -> list[IssueClaim]:
        """Claim up to `limit` claimable issues of `repository` for `session_id`,
        lowest issue number first. Returns the claims taken (maybe none).

        On PostgreSQL the candidates are locked with FOR UPDATE SKIP LOCKED, so
        concurrent claimers take disjoint rows without waiting for each other;
        the UPDATE repeats the claimable condition, so a row is never taken
        twice even where row locks do not exist (SQLite serialises writers).
        """
        if not session_id:
            raise ValueError("a claim needs a session id (spec 000 §1)")
        now = now or timezone.now()
        with transaction.atomic():
            candidates = list(
                self.select_for_update(skip_locked=True)
                .filter(repository=repository)
                .filter(claimable(now))
                .order_by("number")
                .values_list("pk", "state")[:limit]
            )
            if not candidates:
                return []
            return self._take(repository, dict(candidates), session_id, by, now)

    def claim(
        self,
        repository: Repository,
        number: int,
        session_id: str,
        *,
        title: str = "",
        by: str = "",
        now: datetime | None = None,
    ) -> IssueClaim | None:
        """Claim issue `number` for `session_id`; None when it is not claimable
        (held by a live session, cooling down after a failure, blocked, closed).

        The row is created unclaimed on first sight; taking it is one
        conditional UPDATE, so two sessions never both get it.
        """
        if not session_id:
            raise ValueError("a claim needs a session id (spec 000 §1)")
        now = now or timezone.now()
        row, _ = self.get_or_create(
            repository=repository, number=number, defaults={"title": title}
        )
        with transaction.atomic():
            current = (
                self.select_for_update()
                .filter(pk=row.pk)
                .filter(claimable(now))
                .values_list("pk", "state")
                .first()
            )
            if current is None:
                return None
            claims = self._take(repository, dict([current]), session_id, by, now)
        return claims[0] if claims else None

    def _take(
        self,
        repository: Repository,
        sources: dict[int, str],
        session_id: str,
        by: str,
        now: datetime,
    ) -> list[IssueClaim]:
        self.filter(pk__in=list(sources)).filter(claimable(now))._update_with_version(
            state=ClaimState.CLAIMED,
            claimed_by=session_id,
            claimed_at=now,
            expires_at=now + claim_ttl(),
            total_attempts=F("total_attempts") + 1,
            last_session=session_id,
        )
        # claimed_at == now tells this UPDATE's rows from any taken meanwhile.
        taken = list(
            self.filter(
                pk__in=list(sources),
                state=ClaimState.CLAIMED,
                claimed_by=session_id,
                claimed_at=now,
            )
            .select_related("repository")
            .order_by("number")
        )
        Event.objects.bulk_create(
            Event(
                kind=EventKind.CLAIM,
                subject=subject_for(repository, claim.number),
                actor=by or f"session:{session_id}",
                reason=(
                    f"took over a stale {sources[claim.pk]} claim"
                    if sources[claim.pk] in (ClaimState.CLAIMED, ClaimState.FAILED)
                    else "claimed"
                ),
                field="state",
                source=sources[claim.pk],
                target=ClaimState.CLAIMED,
                data={
                    "transition": "claim",
                    "session_id": session_id,
                    "expires_at": claim.expires_at.isoformat(),
                },
                created_at=now,
            )
            for claim in taken
        )
        return taken

    def release_deleted_issue(
        self, repository: Repository, number: int, *, by: str, reason: str
    ) -> int:
        """Issue `number` of `repository` was deleted on GitHub: release its
        claim (whoever holds it) so that no session works on, fails on or
        claims it again. Returns how many claims it released (0 or 1)."""
        released = 0
        for claim in self.filter(repository=repository, number=number).exclude(
            state=ClaimState.BLOCKED
        ):
            if claim.state == ClaimState.RELEASED and claim.issue_closed:
                continue
            claim.perform("release_deleted", by=by, reason=reason)
            released += 1
        return released

    def expire_stale(
        self, *, by: str = SYSTEM_ACTOR, now: datetime | None = None
    ) -> int:
        """Return stale claimed/failed claims to unclaimed; how many it expired.

        A claim another worker changed meanwhile is skipped, not overwritten.
        """
        expired = 0
        for claim in self.stale(now).select_related("repository"):
            try:
                claim.perform("expire", by=by)
            except VersionConflict:
                continue
            expired += 1
        return expired


# -- the model --------------------------------------------------------------------


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
            raise ValueError("a claim needs a session id (spec 000 §1)")
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
