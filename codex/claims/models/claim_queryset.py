"""Finding claims and taking them atomically: `claim_next` and `claim` are
the only ways sessions take them (docs/domain/claims.md#claims)."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from codex.claims.models.claim_state import (
    SYSTEM_ACTOR,
    ClaimState,
    claim_ttl,
    claimable,
    subject_for,
)
from codex.core.store import VersionConflict, VersionedQuerySet
from codex.events.models import Event, EventKind

if TYPE_CHECKING:
    from codex.claims.models.claim import IssueClaim
    from codex.repositories.models import Repository
    from codex.tasks.models import Task


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
            raise ValueError(
                "a claim needs a session id (docs/domain/claims.md#claims)"
            )
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
            raise ValueError(
                "a claim needs a session id (docs/domain/claims.md#claims)"
            )
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

    def settle_for_ended_task(self, task: Task, *, by: str, reason: str) -> int:
        """Settle the issue claim held for `task`, which ended
        (docs/domain/claims.md#claim-ttl): completed closes it, failed counts a
        failure, cancelled releases it. Returns how many claims it settled."""
        from codex.tasks.models import Status

        action = {
            Status.COMPLETED: "close",
            Status.FAILED: "fail",
            Status.CANCELLED: "release",
        }.get(task.status)
        if action is None or not task.issue_number:
            return 0
        settled = 0
        for claim in self.filter(
            repository=task.repository,
            number=task.issue_number,
            state=ClaimState.CLAIMED,
        ):
            claim.perform(action, by=by, reason=reason)
            settled += 1
        return settled

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
