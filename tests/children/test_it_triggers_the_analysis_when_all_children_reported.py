"""Spec 001 "Comment Collection": Extract Child ID → Count Unique IDs →
Count == Expected? → Yes: Trigger Analysis / No: Wait for More."""

from __future__ import annotations

import pytest

from codex.children.models import CompletionAnalysis
from tests.children.factories import make_fan_out, post, workflow_events

pytestmark = pytest.mark.django_db


def test_the_third_of_three_reports_triggers_the_analysis():
    fan_out = make_fan_out(3, issue_number=42)
    post(fan_out, "🤖 Child C1 complete: PR #10 ready for review")
    post(fan_out, "🤖 Child C2 failed: dependency conflicts")
    fan_out.refresh_from_db()
    assert fan_out.state == "awaiting_completions"
    assert not CompletionAnalysis.objects.exists()

    post(fan_out, "🤖 Child C3 complete: PR #12 ready for review")
    assert fan_out.state == "complete"
    analysis = fan_out.analysis
    assert analysis.merge_strategy == "MERGE_PARTIAL"
    assert analysis.prs_to_merge == [10, 12]
    assert (analysis.total_children, analysis.successful_count) == (3, 2)
    assert (analysis.failed_count, analysis.partial_count) == (1, 0)
    assert analysis.trigger == "count"
    assert analysis.decided_by == "rule"
    assert analysis.discrepancy == ""


def test_a_report_is_stored_with_what_the_comment_said():
    fan_out = make_fan_out(3)
    report = post(
        fan_out,
        "🤖 Child C1 complete: PR #10 ready for review",
        comment_id=1234567890,
        author="github-actions[bot]",
    )
    report.refresh_from_db()
    assert (report.child_id, report.status_type, report.pr_number) == (
        "C1",
        "SUCCESS",
        10,
    )
    assert report.comment_id == 1234567890
    assert report.author == "github-actions[bot]"
    assert report.body == "🤖 Child C1 complete: PR #10 ready for review"
    assert report.is_current


def test_a_comment_without_the_marker_is_ignored_entirely():
    fan_out = make_fan_out(1)
    assert post(fan_out, "Looks good to me!") is None
    assert fan_out.reports.count() == 0
    # Only the COUNT_CHECK of opening the window: nothing for the comment.
    assert workflow_events(fan_out) == ["COUNT_CHECK"]
    fan_out.refresh_from_db()
    assert fan_out.state == "awaiting_completions"


def test_the_same_comment_delivered_twice_is_one_report():
    fan_out = make_fan_out(2)
    post(fan_out, "🤖 Child C1 complete: PR #10", comment_id=77)
    post(fan_out, "🤖 Child C1 complete: PR #10", comment_id=77)
    assert fan_out.reports.count() == 1
    # After opening's COUNT_CHECK, one comment's worth of events.
    assert workflow_events(fan_out) == [
        "COUNT_CHECK",
        "COMMENT_RECEIVED",
        "COUNT_CHECK",
    ]


def test_reports_before_the_window_opens_count_when_it_opens():
    fan_out = make_fan_out(2, open_window=False)
    fan_out.perform("spawn_children", by="t")
    post(fan_out, "🤖 Child C1 complete: PR #10")
    post(fan_out, "🤖 Child C2 complete: PR #11")
    fan_out.refresh_from_db()
    assert fan_out.state == "children_spawned"
    fan_out.perform("open_window", by="t")
    assert fan_out.state == "complete"
    assert fan_out.analysis.merge_strategy == "MERGE_ALL"
    assert fan_out.analysis.prs_to_merge == [10, 11]


def test_zero_expected_children_analyse_as_soon_as_the_window_opens():
    fan_out = make_fan_out(0)
    assert fan_out.state == "complete"
    assert fan_out.analysis.merge_strategy == "NO_MERGE"
    assert fan_out.analysis.total_children == 0


def test_the_child_task_is_linked_when_known():
    fan_out = make_fan_out(2)
    from tests.factories import make_task

    child = make_task(title="Child work")
    report = post(fan_out, "🤖 Child C1 complete: PR #10", child_task=child)
    assert list(child.child_reports.all()) == [report]
