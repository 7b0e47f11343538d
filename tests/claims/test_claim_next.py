"""Claiming: lowest issue first, within one repository, one claim per
repository and issue."""

from __future__ import annotations

import pytest
from django.db import IntegrityError

from codex.claims.models import ClaimState, IssueClaim
from tests.claims.factories import make_claim, put_claim_in_state
from tests.factories import make_repository

pytestmark = pytest.mark.django_db


def test_claim_next_takes_the_lowest_claimable_numbers_up_to_the_limit():
    repository = make_repository()
    for number in (5, 3, 9, 1):
        make_claim(repository, number)
    put_claim_in_state(IssueClaim.objects.get(number=1), ClaimState.BLOCKED)

    taken = IssueClaim.objects.claim_next(repository, "s1", limit=2)

    assert [c.number for c in taken] == [3, 5]
    assert all(c.claimed_by == "s1" and c.state == "claimed" for c in taken)
    assert [c.number for c in IssueClaim.objects.claim_next(repository, "s2")] == [9]
    assert IssueClaim.objects.claim_next(repository, "s3") == []


def test_claim_next_stays_within_its_repository():
    mine, other = make_repository(), make_repository()
    make_claim(other, 1)
    assert IssueClaim.objects.claim_next(mine, "s1") == []


def test_claim_by_number_creates_the_row_on_first_sight():
    repository = make_repository()
    claim = IssueClaim.objects.claim(repository, 42, "s1", title="Add login")
    assert (claim.number, claim.title, claim.claimed_by) == (42, "Add login", "s1")
    assert IssueClaim.objects.claim(repository, 42, "s2") is None
    assert IssueClaim.objects.get(repository=repository, number=42).claimed_by == "s1"


def test_one_claim_row_per_repository_and_issue():
    repository = make_repository()
    make_claim(repository, 42)
    make_claim(make_repository(), 42)  # another repository may have #42
    with pytest.raises(IntegrityError):
        make_claim(repository, 42)
