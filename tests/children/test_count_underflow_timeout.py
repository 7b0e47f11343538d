"""Spec 001 "Count Underflow: Timeout waiting for all children → Analyze
available statuses after timeout"; "Total completion window: ~10 minutes"."""

from __future__ import annotations

from datetime import timedelta

import pytest

from codex.children.jobs import close_expired_windows
from codex.children.models import FanOut
from codex.events.models import Event
from tests.children.factories import make_fan_out, post, workflow_events

pytestmark = pytest.mark.django_db


def test_before_the_10_minute_deadline_nothing_happens():
    fan_out = make_fan_out(3)
    post(fan_out, "🤖 Child C1 complete: PR #10")
    opened = fan_out.window_opened_at
    assert fan_out.close_window(opened + timedelta(minutes=9, seconds=59)) is False
    fan_out.refresh_from_db()
    assert fan_out.state == "awaiting_completions"


def test_at_the_deadline_whatever_arrived_is_analysed():
    fan_out = make_fan_out(3)
    post(fan_out, "🤖 Child C1 complete: PR #10")
    post(fan_out, "🤖 Child C2 complete: PR #11")
    assert fan_out.close_window(fan_out.window_opened_at + timedelta(minutes=10))
    assert fan_out.state == "complete"
    analysis = fan_out.analysis
    assert analysis.trigger == "timeout"
    assert analysis.discrepancy == "underflow"
    assert (analysis.expected_child_count, analysis.reporting_count) == (3, 2)
    # Of the available statuses, all succeeded.
    assert analysis.merge_strategy == "MERGE_ALL"
    assert analysis.prs_to_merge == [10, 11]
    triggered = Event.objects.get(task=fan_out.parent, data__event="ANALYSIS_TRIGGERED")
    assert triggered.data["trigger"] == "timeout"
    assert (triggered.data["expected_count"], triggered.data["actual_count"]) == (3, 2)


def test_a_window_with_no_reports_ends_in_no_merge():
    fan_out = make_fan_out(2)
    assert fan_out.close_window(fan_out.deadline)
    assert fan_out.analysis.merge_strategy == "NO_MERGE"
    assert fan_out.analysis.discrepancy == "underflow"


def test_closing_twice_does_nothing_the_second_time():
    fan_out = make_fan_out(2)
    later = fan_out.deadline + timedelta(seconds=1)
    assert fan_out.close_window(later)
    assert fan_out.close_window(later) is False
    assert workflow_events(fan_out).count("ANALYSIS_COMPLETE") == 1


def test_the_window_length_is_per_fan_out():
    fan_out = make_fan_out(2, window=timedelta(minutes=3))
    assert fan_out.deadline - fan_out.window_opened_at == timedelta(minutes=3)


def test_the_scheduled_job_closes_only_expired_windows():
    expired = make_fan_out(2)
    waiting = make_fan_out(2, window=timedelta(hours=1))
    not_open = make_fan_out(2, open_window=False)
    now = expired.deadline + timedelta(seconds=1)
    assert close_expired_windows(now) == 1
    states = dict(FanOut.objects.values_list("pk", "state"))
    assert states == {
        expired.pk: "complete",
        waiting.pk: "awaiting_completions",
        not_open.pk: "created",
    }
    assert close_expired_windows(now) == 0
