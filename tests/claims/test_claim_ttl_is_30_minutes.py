"""Spec 000 §1: "Claims older than TTL (30 min default) are considered stale"."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from codex.claims.models import IssueClaim, claim_ttl
from tests.claims.factories import claimed, make_claim

pytestmark = pytest.mark.django_db


def test_the_default_ttl_is_30_minutes(settings):
    del settings.CODEX_CLAIM_TTL_MINUTES  # absent from codex.settings: the default
    assert claim_ttl() == timedelta(minutes=30)
    claim = claimed()
    assert claim.expires_at - claim.claimed_at == timedelta(minutes=30)


def test_the_ttl_comes_from_codex_claim_ttl_minutes(settings):
    settings.CODEX_CLAIM_TTL_MINUTES = 5
    claim = claimed()
    assert claim.expires_at - claim.claimed_at == timedelta(minutes=5)


def test_a_claim_holds_for_29_minutes_and_is_free_at_30():
    claim = claimed(session_id="session_a")
    repository = claim.repository
    at_29 = claim.claimed_at + timedelta(minutes=29, seconds=59)
    at_30 = claim.claimed_at + timedelta(minutes=30)

    assert IssueClaim.objects.claim_next(repository, "session_b", now=at_29) == []
    [taken] = IssueClaim.objects.claim_next(repository, "session_b", now=at_30)

    assert taken.pk == claim.pk
    assert taken.claimed_by == "session_b"


def test_a_live_claim_is_not_stale_and_cannot_expire():
    claim = claimed()
    assert not claim.stale
    assert "expire" not in [t.name for t in claim.get_available_state_transitions()]


def test_an_unclaimed_issue_never_expires():
    claim = make_claim()
    assert claim.expires_at is None
    assert not claim.stale
    assert IssueClaim.objects.stale(timezone.now() + timedelta(days=1)).count() == 0
