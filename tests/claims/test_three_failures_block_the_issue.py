"""Spec 000 §1: "[Failed] --TTL expires--> [Unclaimed]" and
"--3+ failures--> [Blocked]"."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from codex.claims.models import CLAIM_MAX_FAILURES, ClaimState, IssueClaim
from codex.events.models import Event, EventKind
from tests.claims.factories import backdate, claimed

pytestmark = pytest.mark.django_db


def fail_once(claim: IssueClaim, session: str, reason: str) -> IssueClaim:
    """Re-claim (after the cool-down) and fail again."""
    if claim.state != ClaimState.CLAIMED:
        backdate(claim, timezone.now() - timedelta(seconds=1))
        claim = IssueClaim.objects.claim(claim.repository, claim.number, session)
    claim.perform("fail", by=f"session:{session}", reason=reason, session_id=session)
    return claim


def test_the_limit_is_3():
    assert CLAIM_MAX_FAILURES == 3


def test_a_failure_is_counted_and_timestamped():
    claim = claimed(session_id="s1")
    fail_once(claim, "s1", "timeout")
    claim.refresh_from_db()
    assert claim.state == ClaimState.FAILED
    assert claim.failure_count == 1
    assert claim.failed_at is not None
    assert claim.expires_at == claim.failed_at + timedelta(minutes=30)


def test_a_failed_issue_waits_30_minutes_before_it_is_retried():
    claim = fail_once(claimed(session_id="s1"), "s1", "timeout")
    repository = claim.repository
    before = claim.failed_at + timedelta(minutes=29)
    after = claim.failed_at + timedelta(minutes=30)

    assert IssueClaim.objects.claim_next(repository, "s2", now=before) == []
    [retry] = IssueClaim.objects.claim_next(repository, "s2", now=after)
    assert retry.failure_count == 1  # the count survives the retry


def test_the_third_failure_blocks_the_issue():
    claim = claimed(session_id="s1")
    claim = fail_once(claim, "s1", "content_filter")
    claim = fail_once(claim, "s2", "timeout")
    assert claim.state == ClaimState.FAILED and claim.failure_count == 2

    claim = fail_once(claim, "s3", "timeout")

    claim.refresh_from_db()
    assert claim.state == ClaimState.BLOCKED
    assert claim.failure_count == 3
    events = list(
        Event.objects.filter(kind=EventKind.CLAIM, field="state")
        .order_by("-id")
        .values_list("source", "target")[:2]
    )
    assert events == [("failed", "blocked"), ("claimed", "failed")]


def test_a_blocked_issue_is_never_claimed_even_after_the_ttl():
    claim = claimed(session_id="s1")
    for session in ("s1", "s2", "s3"):
        claim = fail_once(claim, session, "timeout")
    later = timezone.now() + timedelta(days=7)
    assert IssueClaim.objects.claim_next(claim.repository, "s4", now=later) == []
    assert IssueClaim.objects.claim(claim.repository, claim.number, "s4") is None


def test_unblocking_gives_a_fresh_budget_of_3():
    claim = claimed(session_id="s1")
    for session in ("s1", "s2", "s3"):
        claim = fail_once(claim, session, "timeout")
    claim.refresh_from_db()

    claim.perform("unblock", by="user:alice")

    claim.refresh_from_db()
    assert (claim.state, claim.failure_count) == (ClaimState.UNCLAIMED, 0)
    assert claim.failure_reasons == ["timeout"] * 3  # history is kept
    claim = fail_once(
        IssueClaim.objects.claim(claim.repository, claim.number, "s5"), "s5", "x"
    )
    claim.refresh_from_db()
    assert claim.state == ClaimState.FAILED
