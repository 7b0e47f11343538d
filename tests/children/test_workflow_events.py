"""Spec 001 §4 "Event Flow": COMMENT_RECEIVED → COUNT_CHECK → [if threshold met]
→ ANALYSIS_TRIGGERED → ANALYSIS_COMPLETE, in the one event log."""

from __future__ import annotations

import pytest

from codex.events.models import Event
from tests.children.factories import make_fan_out, post, workflow_events

pytestmark = pytest.mark.django_db


def test_the_flow_of_one_fan_out_in_order():
    fan_out = make_fan_out(2, issue_number=42)
    post(
        fan_out, "🤖 Child C1 complete: PR #10 ready for review", comment_id=1234567890
    )
    post(fan_out, "🤖 Child C2 failed: dependency conflicts", comment_id=1234567891)
    assert workflow_events(fan_out) == [
        "COUNT_CHECK",  # opening the window: 0 of 2
        "COMMENT_RECEIVED",
        "COUNT_CHECK",  # 1 of 2: wait for more
        "COMMENT_RECEIVED",
        "COUNT_CHECK",  # 2 of 2: threshold met
        "ANALYSIS_TRIGGERED",
        "ANALYSIS_COMPLETE",
    ]


def test_the_events_carry_the_specs_payloads():
    fan_out = make_fan_out(2, issue_number=42)
    post(
        fan_out, "🤖 Child C1 complete: PR #10 ready for review", comment_id=1234567890
    )
    post(fan_out, "🤖 Child C2 failed: dependency conflicts", comment_id=1234567891)
    events = {
        e.data["event"]: e
        for e in Event.objects.filter(task=fan_out.parent, kind="workflow").in_order()
    }
    received = events["COMMENT_RECEIVED"]
    assert received.data["child_id"] == "C2"
    assert received.data["comment_id"] == 1234567891
    assert received.data["status_type"] == "FAILURE"
    assert received.data["issue_number"] == 42
    assert received.actor == "webhook:test"
    assert received.subject == f"fanout:{fan_out.pk}"
    check = events["COUNT_CHECK"].data
    assert (check["expected_count"], check["actual_count"]) == (2, 2)
    assert check["threshold_met"] is True
    # Spec 001 "Repository Dispatch Payload" analyze_completions.
    triggered = events["ANALYSIS_TRIGGERED"].data
    assert triggered["issue_number"] == 42
    assert (triggered["expected_count"], triggered["actual_count"]) == (2, 2)
    assert triggered["comment_ids"] == [1234567890, 1234567891]
    complete = events["ANALYSIS_COMPLETE"].data
    assert complete["merge_strategy"] == "NO_MERGE"
    assert (complete["successful"], complete["failed"]) == (1, 1)
    assert complete["decided_by"] == "rule"


def test_a_count_below_expected_is_logged_as_not_met():
    fan_out = make_fan_out(3)
    post(fan_out, "🤖 Child C1 complete: PR #10")
    check = Event.objects.filter(task=fan_out.parent, data__event="COUNT_CHECK").last()
    assert check.data["threshold_met"] is False
    assert check.reason == "1 of 3 expected children reported"
