"""Spec 001 "Count Overflow: More children report than expected → Proceed with
analysis, note discrepancy"."""

from __future__ import annotations

import pytest

from codex.events.models import Event
from tests.children.factories import make_fan_out, post

pytestmark = pytest.mark.django_db


def test_a_child_beyond_the_expected_count_is_analysed_and_noted():
    fan_out = make_fan_out(0, open_window=False)
    fan_out.perform("spawn_children", by="t")
    post(fan_out, "🤖 Child C1 complete: PR #10")
    fan_out.perform("open_window", by="t")
    analysis = fan_out.analysis
    assert analysis.discrepancy == "overflow"
    assert (analysis.expected_child_count, analysis.reporting_count) == (0, 1)
    assert analysis.merge_strategy == "MERGE_ALL"
    check = Event.objects.filter(task=fan_out.parent, data__event="COUNT_CHECK").last()
    assert check.data["discrepancy"] == "overflow"
    assert (check.data["expected_count"], check.data["actual_count"]) == (0, 1)


def test_a_child_reporting_after_the_analysis_is_kept_but_starts_nothing():
    fan_out = make_fan_out(1)
    post(fan_out, "🤖 Child C1 complete: PR #10")
    fan_out.refresh_from_db()
    analysed_at = fan_out.analysis.analysed_at
    late = post(fan_out, "🤖 Child C2 failed: too late")
    assert late.is_current
    fan_out.refresh_from_db()
    assert fan_out.state == "complete"
    assert fan_out.analysis.analysed_at == analysed_at
    assert fan_out.analysis.prs_to_merge == [10]
    events = Event.objects.filter(task=fan_out.parent, kind="workflow").in_order()
    last_two = [e.data for e in events][-2:]
    assert last_two[0]["event"] == "COMMENT_RECEIVED" and last_two[0]["late"]
    assert last_two[1]["event"] == "COUNT_CHECK"
    assert last_two[1]["discrepancy"] == "overflow"


def test_a_manual_rerun_then_includes_the_late_child():
    fan_out = make_fan_out(1)
    post(fan_out, "🤖 Child C1 complete: PR #10")
    post(fan_out, "🤖 Child C2 failed: too late")
    fan_out.refresh_from_db()
    fan_out.perform("trigger_manually", by="user:alice", reason="include C2")
    analysis = fan_out.analysis
    analysis.refresh_from_db()
    assert fan_out.state == "complete"
    assert analysis.trigger == "manual"
    assert analysis.discrepancy == "overflow"
    assert (analysis.successful_count, analysis.failed_count) == (1, 1)
    assert analysis.merge_strategy == "NO_MERGE"  # 1 of 2 is not > 50%
