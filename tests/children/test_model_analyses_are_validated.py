"""Claude decides, the rules are the fallback, and every result is validated
(DESIGN "Parent and children"; spec 001 §3 Validation Rules)."""

from __future__ import annotations

import pytest

from codex.children.decision import candidate_from_model_response
from codex.events.models import Event
from tests.children.factories import SPEC_RESPONSE, make_fan_out, post

pytestmark = pytest.mark.django_db


def run(analyst):
    fan_out = make_fan_out(2)
    post(fan_out, "🤖 Child C1 complete: PR #10 ready for review")
    post(fan_out, "🤖 Child C2 failed: dependency conflicts", analyst=analyst)
    fan_out.refresh_from_db()
    complete = Event.objects.get(task=fan_out.parent, data__event="ANALYSIS_COMPLETE")
    return fan_out.analysis, complete.data


def test_a_valid_model_decision_is_stored_as_the_models():
    analysis, event = run(
        lambda reports: candidate_from_model_response(SPEC_RESPONSE, reports)
    )
    assert analysis.decided_by == "model"
    assert analysis.merge_strategy == "MERGE_PARTIAL"  # the rules say NO_MERGE
    assert analysis.prs_to_merge == [10]
    assert analysis.reasoning.startswith("Child C1 completed successfully")
    assert event["fallback"] == ""


def test_an_invalid_model_decision_falls_back_to_the_rules():
    bad = {"analysis": {**SPEC_RESPONSE["analysis"], "prs_to_merge": [10, 666]}}
    analysis, event = run(lambda reports: candidate_from_model_response(bad, reports))
    assert analysis.decided_by == "rule"
    assert analysis.merge_strategy == "NO_MERGE"
    assert analysis.prs_to_merge == []
    assert "AnalysisInvalid" in event["fallback"]
    assert "#666" in event["fallback"]


def test_a_failing_model_falls_back_to_the_rules():
    def overloaded(reports):
        raise TimeoutError("529 overloaded")

    analysis, event = run(overloaded)
    assert analysis.decided_by == "rule"
    assert event["fallback"] == "TimeoutError: 529 overloaded"
