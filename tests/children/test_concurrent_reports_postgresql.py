"""Children report at the same moment from different workers: every report is
kept and the analysis runs exactly once (row lock + version + lease)."""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from codex.children.models import ChildReport, CompletionAnalysis, FanOut
from codex.events.models import Event
from tests.children.factories import make_fan_out

pytestmark = [pytest.mark.postgresql, pytest.mark.django_db(transaction=True)]


def deliver_at_once(fan_out_pk: int, comments: list[tuple[int, str]]) -> list:
    barrier = threading.Barrier(len(comments))
    errors: list[BaseException] = []

    def worker(comment_id: int, body: str) -> None:
        try:
            fan_out = FanOut.objects.get(pk=fan_out_pk)
            barrier.wait()
            fan_out.receive_comment(
                comment_id=comment_id, body=body, by=f"worker:{comment_id}"
            )
        except BaseException as exc:  # reported to the test below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=worker, args=c) for c in comments]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    return errors


def test_the_last_reports_arriving_together_trigger_one_analysis():
    fan_out = make_fan_out(5)
    comments = [(100 + n, f"🤖 Child C{n} complete: PR #{n}") for n in range(1, 6)]
    assert deliver_at_once(fan_out.pk, comments) == []
    fan_out.refresh_from_db()
    assert fan_out.state == "complete"
    assert ChildReport.objects.filter(fan_out=fan_out, is_current=True).count() == 5
    assert CompletionAnalysis.objects.get(fan_out=fan_out).prs_to_merge == [
        1,
        2,
        3,
        4,
        5,
    ]
    events = Event.objects.filter(task=fan_out.parent, kind="workflow")
    assert events.filter(data__event="ANALYSIS_TRIGGERED").count() == 1
    assert events.filter(data__event="ANALYSIS_COMPLETE").count() == 1
    assert events.filter(data__event="COMMENT_RECEIVED").count() == 5


def test_one_comment_delivered_twice_at_once_is_one_report():
    fan_out = make_fan_out(2)
    body = "🤖 Child C1 complete: PR #10"
    assert deliver_at_once(fan_out.pk, [(7, body), (7, body)]) == []
    assert ChildReport.objects.filter(fan_out=fan_out).count() == 1
    received = Event.objects.filter(task=fan_out.parent, data__event="COMMENT_RECEIVED")
    assert received.count() == 1
