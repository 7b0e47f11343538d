"""The claim state machine of spec 000 §1: claim, close (success), release,
fail, block/unblock, expire; versions guard concurrent writers."""

from __future__ import annotations

import pytest
from django_fsm import TransitionNotAllowed

from codex.claims.models import ClaimNotHeld, ClaimState, IssueClaim
from codex.core.store.refusals import VersionConflict
from tests.claims.factories import claimed, make_claim, put_claim_in_state

pytestmark = pytest.mark.django_db


def test_closing_is_success_and_the_issue_is_not_claimed_again():
    claim = claimed(session_id="s1")
    claim.perform("close", by="session:s1", session_id="s1")
    claim.refresh_from_db()
    assert claim.state == ClaimState.RELEASED
    assert claim.issue_closed
    assert claim.successful_closes == 1
    assert IssueClaim.objects.claim_next(claim.repository, "s2") == []


def test_releasing_lets_another_session_claim_the_open_issue():
    claim = claimed(session_id="s1")
    claim.perform("release", by="user:alice")
    claim.refresh_from_db()
    assert (claim.state, claim.issue_closed) == (ClaimState.RELEASED, False)
    [again] = IssueClaim.objects.claim_next(claim.repository, "s2")
    assert again.pk == claim.pk and again.claimed_by == "s2"


@pytest.mark.parametrize("action", ["close", "release", "fail"])
def test_only_the_holding_session_finishes_its_claim(action):
    claim = claimed(session_id="s1")
    with pytest.raises(ClaimNotHeld):
        claim.perform(action, by="session:s2", session_id="s2")
    claim.refresh_from_db()
    assert claim.state == ClaimState.CLAIMED


@pytest.mark.parametrize("action", ["close", "release", "fail", "unblock", "expire"])
def test_an_unclaimed_issue_cannot_be_finished(action):
    claim = make_claim()
    with pytest.raises(TransitionNotAllowed):
        claim.perform(action, by="user:alice")


def test_an_operator_can_block_and_unblock_an_issue():
    claim = make_claim()
    claim.perform("block", by="user:alice", reason="needs a design decision")
    assert IssueClaim.objects.claim_next(claim.repository, "s1") == []
    claim.perform("unblock", by="user:alice")
    assert IssueClaim.objects.claim_next(claim.repository, "s1") != []


def test_a_live_claim_cannot_be_blocked_under_its_session():
    claim = claimed()
    with pytest.raises(TransitionNotAllowed):
        claim.perform("block", by="user:alice")


def test_the_instance_claim_transition_takes_a_free_issue_only():
    claim = make_claim()
    claim.perform("claim", by="session:s1", session_id="s1")
    claim.refresh_from_db()
    assert (claim.state, claim.claimed_by, claim.total_attempts) == ("claimed", "s1", 1)
    with pytest.raises(TransitionNotAllowed):
        claim.perform("claim", by="session:s2", session_id="s2")


def test_a_stale_copy_cannot_overwrite_a_newer_claim():
    claim = claimed(session_id="s1")
    stale_copy = IssueClaim.objects.get(pk=claim.pk)
    claim.perform("fail", by="session:s1", reason="timeout")

    with pytest.raises(VersionConflict):
        stale_copy.perform("close", by="session:s1")

    stale_copy.refresh_from_db()
    assert stale_copy.state == ClaimState.FAILED
    assert stale_copy.successful_closes == 0


def test_the_state_cannot_be_assigned_directly():
    claim = make_claim()
    with pytest.raises(AttributeError):
        claim.state = ClaimState.CLAIMED
    with pytest.raises(Exception, match="bypass"):
        IssueClaim.objects.filter(pk=claim.pk).update(state=ClaimState.CLAIMED)


def test_a_claim_needs_a_session_id():
    claim = make_claim()
    with pytest.raises(ValueError):
        IssueClaim.objects.claim_next(claim.repository, "")
    put_claim_in_state(claim, ClaimState.UNCLAIMED)
    with pytest.raises(ValueError):
        claim.perform("claim", by="x", session_id="")
    claim.refresh_from_db()
    assert claim.state == ClaimState.UNCLAIMED
