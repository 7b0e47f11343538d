"""Spec 001 "Duplicate Reports: Same child reports multiple times → Use latest
report only"; the superseded reports are kept, marked not current."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import IntegrityError, transaction
from django.utils import timezone

from codex.children.models import ChildReport
from codex.events.models import Event
from tests.children.factories import make_fan_out, post

pytestmark = pytest.mark.django_db


def test_a_childs_later_report_replaces_its_earlier_one():
    fan_out = make_fan_out(2)
    first = post(fan_out, "🤖 Child C1 failed: flaky test", comment_id=1, minutes=0)
    second = post(fan_out, "🤖 Child C1 complete: PR #10", comment_id=2, minutes=1)
    first.refresh_from_db()
    assert not first.is_current
    assert second.is_current
    assert list(fan_out.reports.current()) == [second]
    assert fan_out.reports.count() == 2
    # One child, however often it reports: still waiting for C2.
    fan_out.refresh_from_db()
    assert fan_out.reporting_count() == 1
    assert fan_out.state == "awaiting_completions"
    received = Event.objects.filter(
        task=fan_out.parent, data__event="COMMENT_RECEIVED"
    ).in_order()
    assert [e.data["supersedes"] for e in received] == [None, 1]


def test_an_older_comment_delivered_late_does_not_win():
    fan_out = make_fan_out(2)
    now = timezone.now()
    newer = post(
        fan_out, "🤖 Child C1 complete: PR #10", comment_id=20, reported_at=now
    )
    older = post(
        fan_out,
        "🤖 Child C1 failed: oops",
        comment_id=10,
        reported_at=now - timedelta(minutes=5),
    )
    assert not older.is_current
    newer.refresh_from_db()
    assert newer.is_current


def test_the_analysis_uses_only_the_latest_report_of_each_child():
    fan_out = make_fan_out(2)
    post(fan_out, "🤖 Child C1 failed: flaky test", minutes=0)
    post(fan_out, "🤖 Child C1 complete: PR #10", minutes=1)
    post(fan_out, "🤖 Child C2 complete: PR #11", minutes=2)
    fan_out.refresh_from_db()
    assert fan_out.analysis.merge_strategy == "MERGE_ALL"
    assert fan_out.analysis.prs_to_merge == [10, 11]
    assert fan_out.analysis.failed_children == []


def test_the_database_refuses_two_current_reports_of_one_child():
    fan_out = make_fan_out(2)
    report = post(fan_out, "🤖 Child C1 complete: PR #10")
    with pytest.raises(IntegrityError), transaction.atomic():
        ChildReport.objects.create(
            fan_out=fan_out,
            child_id="C1",
            status_type="FAILURE",
            body="🤖 Child C1 failed",
            comment_id=report.comment_id + 1,
            reported_at=timezone.now(),
        )
