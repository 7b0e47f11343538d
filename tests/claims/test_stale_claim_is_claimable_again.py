"""A claim past its TTL (30 min) is stale: any session may take it again."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from django_fsm import TransitionNotAllowed

from codex.claims.jobs import expire_stale_claims
from codex.claims.models import ClaimState, IssueClaim
from codex.events.models import Event, EventKind
from tests.claims.factories import backdate, claimed

pytestmark = pytest.mark.django_db


def test_another_session_takes_over_a_claim_past_30_minutes():
    claim = backdate(claimed(session_id="session_a"), timezone.now())

    [taken] = IssueClaim.objects.claim_next(claim.repository, "session_b")

    assert (taken.pk, taken.claimed_by, taken.state) == (
        claim.pk,
        "session_b",
        ClaimState.CLAIMED,
    )
    assert taken.expires_at > timezone.now() + timedelta(minutes=29)
    event = Event.objects.filter(kind=EventKind.CLAIM).last()
    assert (event.source, event.target) == ("claimed", "claimed")
    assert "stale" in event.reason
    assert event.data["session_id"] == "session_b"


def test_claim_by_number_takes_over_a_stale_claim_only():
    claim = claimed(session_id="session_a")
    repository, number = claim.repository, claim.number
    assert IssueClaim.objects.claim(repository, number, "session_b") is None

    backdate(claim, timezone.now() - timedelta(seconds=1))
    taken = IssueClaim.objects.claim(repository, number, "session_b")
    assert taken.claimed_by == "session_b"


def test_expire_returns_a_stale_claim_to_unclaimed():
    claim = backdate(claimed(), timezone.now() - timedelta(minutes=1))
    assert claim.stale

    claim.perform("expire", by="worker:1")

    claim.refresh_from_db()
    assert claim.state == ClaimState.UNCLAIMED
    assert claim.claimed_by == ""
    assert claim.expires_at is None


def test_expire_is_refused_before_the_ttl_passes():
    claim = claimed()
    with pytest.raises(TransitionNotAllowed):
        claim.perform("expire", by="worker:1")
    claim.refresh_from_db()
    assert claim.state == ClaimState.CLAIMED


def test_the_expiry_job_expires_only_stale_claims():
    stale = backdate(claimed(), timezone.now() - timedelta(minutes=1))
    live = claimed(stale.repository)

    assert expire_stale_claims() == 1

    stale.refresh_from_db()
    live.refresh_from_db()
    assert stale.state == ClaimState.UNCLAIMED
    assert live.state == ClaimState.CLAIMED
    assert expire_stale_claims() == 0
