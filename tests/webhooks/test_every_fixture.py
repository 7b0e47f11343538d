"""Every real payload in the shared fixtures is accepted and processed cleanly."""

from __future__ import annotations

import itertools

import pytest

from codex.webhooks.events import is_handled
from codex.webhooks.handlers import REPOSITORY_FREE_EVENTS
from codex.webhooks.models import Outcome, WebhookDelivery
from tests.webhooks.conftest import FIXTURES, process_all

CASES = sorted((path.parent.name, path.name) for path in FIXTURES.glob("*/*.json"))
_ids = itertools.count(1)


def test_the_fixtures_are_there():
    assert len(CASES) > 90
    assert {event for event, _ in CASES} >= {
        "issues",
        "issue_comment",
        "pull_request",
        "pull_request_review",
        "check_suite",
        "check_run",
        "projects_v2_item",
        "installation",
        "installation_repositories",
        "ping",
    }


@pytest.mark.django_db
@pytest.mark.parametrize("known", [True, False], ids=["known-repo", "unknown-repo"])
@pytest.mark.parametrize("event, name", CASES)
def test_every_payload_is_accepted_and_processing_records_an_outcome(
    deliver, event, name, known, request
):
    if known:
        request.getfixturevalue("hello_world")
    payload = (FIXTURES / event / name).read_bytes()
    response = deliver(event, payload, delivery=f"fixture-{next(_ids)}")
    assert response.status_code == (200 if event == "ping" else 202)
    process_all()
    delivery = WebhookDelivery.objects.get()
    assert delivery.processed_at is not None
    assert delivery.outcome not in (Outcome.PENDING, Outcome.FAILED), delivery.error
    assert delivery.error == ""
    acts_on_repository = is_handled(event, delivery.action) and (
        event not in REPOSITORY_FREE_EVENTS
    )
    if not known and acts_on_repository:
        assert delivery.outcome == Outcome.UNKNOWN_REPOSITORY
