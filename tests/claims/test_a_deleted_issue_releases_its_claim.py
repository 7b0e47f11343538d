"""An issue deleted on GitHub: its claim is released for good (spec 000's
released state, with the issue marked gone), not counted as a failure."""

from __future__ import annotations

import pytest

from codex.claims.models import ClaimState, IssueClaim
from codex.events.models import Event
from tests.claims.factories import claimed, make_claim

pytestmark = pytest.mark.django_db

REASON = "the task's source issue #7 is gone: issue #7 of acme/web was deleted"


def test_a_held_claim_is_released_and_never_claimable_again():
    claim = claimed(number=7)

    assert (
        IssueClaim.objects.release_deleted_issue(
            claim.repository, 7, by="system:pipeline", reason=REASON
        )
        == 1
    )

    claim.refresh_from_db()
    assert claim.state == ClaimState.RELEASED and claim.issue_closed
    assert (claim.failure_count, claim.successful_closes) == (0, 0)
    assert claim.expires_at is None
    assert IssueClaim.objects.claim(claim.repository, 7, "session_2") is None
    event = Event.objects.filter(subject=claim.event_subject).latest("id")
    assert (event.source, event.target, event.reason) == ("claimed", "released", REASON)


@pytest.mark.parametrize("state", [ClaimState.UNCLAIMED, ClaimState.FAILED])
def test_an_unheld_claim_is_released_too(state):
    claim = make_claim(number=8, state=state)
    IssueClaim.objects.release_deleted_issue(
        claim.repository, 8, by="system:pipeline", reason=REASON
    )
    claim.refresh_from_db()
    assert claim.state == ClaimState.RELEASED and claim.issue_closed


def test_blocked_and_already_released_claims_are_left_alone():
    blocked = make_claim(number=9, state=ClaimState.BLOCKED)
    gone = claimed(number=10)
    release = IssueClaim.objects.release_deleted_issue
    release(gone.repository, 10, by="system:pipeline", reason=REASON)

    assert release(blocked.repository, 9, by="x", reason=REASON) == 0
    assert release(gone.repository, 10, by="x", reason=REASON) == 0
    blocked.refresh_from_db()
    assert blocked.state == ClaimState.BLOCKED
