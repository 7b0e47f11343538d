"""Spec 001 §3 through the real SDK against the loopback Messages API: the
completion analysis asks Claude (one call, spec 001's request and response
shapes); a valid answer is stored as the model's, and an invalid one, a failed
call or no configured model fall back to the rules, with the reason on
ANALYSIS_COMPLETE."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from agents.fanout import ANALYSIS_MAX_TOKENS
from codex.children.models.fan_out import ANALYSIS_TIMED_OUT
from codex.events.models import Event
from tests.children.factories import SPEC_RESPONSE, make_fan_out, post
from tests.model_stub import ModelStub, error, message

pytestmark = pytest.mark.django_db


@pytest.fixture
def stub():
    with ModelStub() as server:
        yield server


@pytest.fixture
def claude(settings, stub):
    settings.ANTHROPIC_BASE_URL = stub.url
    settings.CODEX_CREDENTIALS = {"claude": ["test-key"], "github": []}
    settings.CODEX_MODEL_MAX_RETRIES = 0
    return stub


def run_fan_out():
    fan_out = make_fan_out(2, issue_number=42)
    post(fan_out, "🤖 Child C1 complete: PR #10 ready for review")
    post(fan_out, "🤖 Child C2 failed: dependency conflicts")
    fan_out.refresh_from_db()
    complete = Event.objects.get(task=fan_out.parent, data__event="ANALYSIS_COMPLETE")
    return fan_out.analysis, complete.data


def test_claudes_valid_decision_is_stored(claude):
    claude.add(
        message(
            json.dumps(SPEC_RESPONSE), usage={"input_tokens": 500, "output_tokens": 80}
        )
    )

    analysis, event = run_fan_out()

    assert analysis.decided_by == "model"
    assert analysis.merge_strategy == "MERGE_PARTIAL"  # the rules say NO_MERGE
    assert analysis.prs_to_merge == [10]
    assert analysis.reasoning.startswith("Child C1 completed successfully")
    assert event["fallback"] == ""
    assert (event["input_tokens"], event["output_tokens"]) == (500, 80)
    assert float(event["cost_usd"]) > 0
    # One call, bounded, with spec 001's request fenced as untrusted data.
    (body,) = claude.bodies
    assert body["max_tokens"] == ANALYSIS_MAX_TOKENS and "tools" not in body
    content = body["messages"][0]["content"]
    content = content if isinstance(content, str) else content[0]["text"]
    assert content.startswith("<untrusted-")
    request = json.loads(content.split("\n", 1)[1].rsplit("\n</untrusted-", 1)[0])
    assert request == {
        "issue_number": 42,
        "child_statuses": [
            {
                "child_id": "C1",
                "comment": "🤖 Child C1 complete: PR #10 ready for review",
            },
            {"child_id": "C2", "comment": "🤖 Child C2 failed: dependency conflicts"},
        ],
        "instruction": "Analyze these child agent reports and decide on merge strategy",
    }


def test_a_json_fence_around_the_answer_is_accepted(claude):
    claude.add(message("```json\n" + json.dumps(SPEC_RESPONSE) + "\n```"))
    analysis, _ = run_fan_out()
    assert analysis.decided_by == "model"


def test_an_answer_breaking_the_rules_falls_back_with_the_violation(claude):
    bad = {"analysis": {**SPEC_RESPONSE["analysis"], "prs_to_merge": [10, 666]}}
    claude.add(message(json.dumps(bad)))

    analysis, event = run_fan_out()

    assert analysis.decided_by == "rule"
    assert analysis.merge_strategy == "NO_MERGE" and analysis.prs_to_merge == []
    assert event["fallback"].startswith("AnalysisInvalid")
    assert "#666" in event["fallback"]
    assert event["input_tokens"] > 0  # the call was made and is accounted for


def test_an_answer_that_is_not_json_falls_back(claude):
    claude.add(message("I would merge PR #10."))
    analysis, event = run_fan_out()
    assert analysis.decided_by == "rule"
    assert "not JSON" in event["fallback"]


def test_a_model_error_falls_back_to_the_rules(claude):
    claude.add(error(529, retry_after=3))

    analysis, event = run_fan_out()

    assert analysis.decided_by == "rule"
    assert event["fallback"].startswith("ClassifiedFailure")
    assert "overloaded" in event["fallback"]


def test_without_a_model_the_rules_decide_and_say_so(settings):
    settings.CODEX_CREDENTIALS = {"claude": [], "github": []}
    analysis, event = run_fan_out()
    assert analysis.decided_by == "rule"
    assert event["fallback"].startswith("no model analysis: ModelNotConfigured")


def test_past_its_8_minutes_the_rules_decide_without_asking(claude, monkeypatch):
    from codex.children.models import FanOut

    fan_out = make_fan_out(2, issue_number=42)
    post(fan_out, "🤖 Child C1 complete: PR #10")
    with monkeypatch.context() as patch:
        patch.setattr(FanOut, "analyse", lambda self, **kwargs: None)
        post(fan_out, "🤖 Child C2 complete: PR #11")
    fan_out.refresh_from_db()
    assert fan_out.state == "analyzing"

    assert fan_out.close_window(fan_out.analysis_started_at + timedelta(minutes=8))

    assert fan_out.analysis.decided_by == "rule"
    event = Event.objects.get(task=fan_out.parent, data__event="ANALYSIS_COMPLETE")
    assert event.data["fallback"] == ANALYSIS_TIMED_OUT
    assert claude.bodies == []
