"""Every claim transition writes an Event of kind "claim", subject
"claim:<owner/name>#<number>"."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from codex.claims.models import IssueClaim
from codex.core.store.refusals import VersionConflict
from codex.events.models import Event, EventKind
from tests.claims.factories import backdate, make_claim
from tests.factories import make_repository

pytestmark = pytest.mark.django_db


def story(subject: str) -> list[tuple[str, str, str, str]]:
    return [
        (e.data.get("transition"), e.source, e.target, e.actor)
        for e in Event.objects.filter(subject=subject).in_order()
    ]


def test_a_claims_whole_life_is_in_the_event_log():
    repository = make_repository("https://github.com/acme/app")
    make_claim(repository, 42)
    subject = "claim:acme/app#42"

    claim = IssueClaim.objects.claim(repository, 42, "s1")
    claim.perform("fail", by="session:s1", reason="timeout")
    backdate(claim, timezone.now() - timedelta(seconds=1))
    [claim] = IssueClaim.objects.claim_next(repository, "s2")
    claim.perform("close", by="session:s2")

    assert story(subject) == [
        ("claim", "unclaimed", "claimed", "session:s1"),
        ("fail", "claimed", "failed", "session:s1"),
        ("claim", "failed", "claimed", "session:s2"),
        ("close", "claimed", "released", "session:s2"),
    ]
    events = Event.objects.filter(subject=subject)
    assert {e.kind for e in events} == {EventKind.CLAIM}
    assert {e.field for e in events} == {"state"}
    assert events.get(data__transition="fail").reason == "timeout"


def test_a_refused_write_leaves_no_event():
    claim = IssueClaim.objects.claim(make_repository(), 7, "s1")
    stale_copy = IssueClaim.objects.get(pk=claim.pk)
    claim.perform("release", by="session:s1")
    before = Event.objects.count()

    with pytest.raises(VersionConflict):
        stale_copy.perform("fail", by="session:s1")

    assert Event.objects.count() == before
