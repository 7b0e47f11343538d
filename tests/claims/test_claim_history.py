"""Spec 000 §7 ClaimHistoryEntry: total_attempts, successful_closes,
failure_reasons, last_session accumulate over every attempt."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from codex.claims.models import IssueClaim
from tests.claims.factories import backdate, make_claim

pytestmark = pytest.mark.django_db


def test_history_counts_attempts_closes_and_failure_reasons():
    claim = make_claim()
    repository, number = claim.repository, claim.number

    first = IssueClaim.objects.claim(repository, number, "session_1")
    first.perform("fail", by="session:1", reason="content_filter")
    backdate(first, timezone.now() - timedelta(seconds=1))
    second = IssueClaim.objects.claim(repository, number, "session_2")
    second.perform("fail", by="session:2", reason="timeout")
    backdate(second, timezone.now() - timedelta(seconds=1))
    third = IssueClaim.objects.claim(repository, number, "session_20251217_150000_1")
    third.perform("close", by="session:3")

    third.refresh_from_db()
    assert third.total_attempts == 3
    assert third.successful_closes == 1
    assert third.failure_reasons == ["content_filter", "timeout"]
    assert third.last_session == "session_20251217_150000_1"


def test_an_unclaimed_issue_has_no_history():
    claim = make_claim()
    assert (claim.total_attempts, claim.successful_closes) == (0, 0)
    assert claim.failure_reasons == [] and claim.last_session == ""
