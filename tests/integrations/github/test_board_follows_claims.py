"""Spec 000 §3: the board moves Todo → In Progress → Done as claims move, and
each move is shown on GitHub once (the same status is never pushed twice)."""

from __future__ import annotations

import json

import pytest

from codex.claims.jobs import follow_claims_on_board
from codex.claims.models import IssueClaim
from tests.claims.factories import make_board_item, make_project
from tests.integrations.github.payloads import GRAPHQL

# perform_once commits its record before acting: no test-wide transaction.
pytestmark = pytest.mark.django_db(transaction=True)


def moved(item_id: str) -> dict:
    return {
        "data": {"updateProjectV2ItemFieldValue": {"projectV2Item": {"id": item_id}}}
    }


def test_a_claimed_issue_moves_to_in_progress_then_done(github, repository):
    project = make_project(repository, in_progress_option_id="47d3e")
    item = make_board_item(project, issue_number=5, item_id="PVTI_5")
    IssueClaim.objects.claim(repository, 5, "session-1")
    github.post(GRAPHQL, json=moved("PVTI_5"))

    assert follow_claims_on_board() == {
        "added": 0,
        "in_progress": 1,
        "done": 0,
        "pushed": 1,
    }
    item.refresh_from_db()
    assert item.status == "in_progress"
    variables = json.loads(github.calls[0].request.body)["variables"]
    assert variables["itemId"] == "PVTI_5"
    assert "47d3e" in json.dumps(variables)

    # Nothing changed: nothing is moved or pushed again.
    assert follow_claims_on_board() == {
        "added": 0,
        "in_progress": 0,
        "done": 0,
        "pushed": 0,
    }

    claim = IssueClaim.objects.get(repository=repository, number=5)
    claim.perform("close", by="test")
    github.post(GRAPHQL, json=moved("PVTI_5"))
    assert follow_claims_on_board()["done"] == 1
    item.refresh_from_db()
    assert item.status == "done"
    assert len(github.calls) == 2


def test_an_unclaimed_issue_stays_in_todo(github, repository):
    project = make_project(repository)
    item = make_board_item(project, issue_number=6, item_id="PVTI_6")
    assert follow_claims_on_board() == {
        "added": 0,
        "in_progress": 0,
        "done": 0,
        "pushed": 0,
    }
    item.refresh_from_db()
    assert item.status == "todo"
