"""The operator console: fan-outs with their reports and analysis inline, the
reports and analyses lists; constant query counts (3 rows cost what 30 cost)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from codex.children.models import FanOut
from tests.children.factories import make_fan_out, post
from tests.factories import make_task

pytestmark = pytest.mark.django_db

FAN_OUTS = reverse("admin:children_fanout_changelist")
REPORTS = reverse("admin:children_childreport_changelist")
ANALYSES = reverse("admin:children_completionanalysis_changelist")


def analysed_fan_out(n: int) -> FanOut:
    fan_out = make_fan_out(2, issue_number=1000 + n)
    post(fan_out, f"🤖 Child C1 complete: PR #{n * 10 + 1}", child_task=make_task())
    post(fan_out, "🤖 Child C2 failed: dependency conflicts")
    fan_out.refresh_from_db()
    return fan_out


def make_rows(count: int, start: int = 0) -> None:
    for n in range(start, start + count):
        analysed_fan_out(n)


@pytest.mark.parametrize("url", [FAN_OUTS, REPORTS, ANALYSES])
def test_changelists_cost_the_same_for_3_and_30_rows(
    console, django_assert_max_num_queries, url
):
    make_rows(3)
    console.get(url)  # warm caches (content types, session)
    with CaptureQueriesContext(connection) as three:
        response = console.get(url)
    assert response.status_code == 200
    assert len(response.context["cl"].result_list) >= 3
    make_rows(27, start=3)
    with django_assert_max_num_queries(len(three.captured_queries)):
        response = console.get(url)
    assert len(response.context["cl"].result_list) >= 30


def test_the_fan_out_list_shows_progress_and_strategy(console):
    waiting = make_fan_out(3)
    post(waiting, "🤖 Child C1 complete: PR #10")
    post(waiting, "🤖 Child C1 complete: PR #10 (again)")
    done = analysed_fan_out(1)
    response = console.get(FAN_OUTS)
    rows = {obj.pk: obj for obj in response.context["cl"].result_list}
    assert rows[waiting.pk].reported_children == 1  # latest report per child
    html = response.content.decode()
    assert "1 / 3" in html
    assert "NO_MERGE" in html
    assert done.parent.task_id in html


def test_the_fan_out_list_filters_and_searches(console):
    waiting = make_fan_out(3)
    done = analysed_fan_out(7)
    response = console.get(FAN_OUTS, {"state": "complete"})
    assert list(response.context["cl"].result_list) == [done]
    response = console.get(FAN_OUTS, {"analysis__merge_strategy": "NO_MERGE"})
    assert list(response.context["cl"].result_list) == [done]
    response = console.get(FAN_OUTS, {"q": waiting.parent.task_id})
    assert list(response.context["cl"].result_list) == [waiting]
    response = console.get(FAN_OUTS, {"q": "1007"})
    assert list(response.context["cl"].result_list) == [done]


def test_the_fan_out_page_shows_reports_and_analysis_inline(console):
    fan_out = analysed_fan_out(1)
    response = console.get(reverse("admin:children_fanout_change", args=[fan_out.pk]))
    assert response.status_code == 200
    html = response.content.decode()
    assert "dependency conflicts" in html
    assert "Completion analysis" in html
    assert "NO_MERGE" in html
    assert "Not more than 50% succeeded" in html


def test_the_report_and_analysis_lists_filter_and_search(console):
    fan_out = analysed_fan_out(1)
    response = console.get(REPORTS, {"status_type": "FAILURE"})
    assert [r.child_id for r in response.context["cl"].result_list] == ["C2"]
    response = console.get(REPORTS, {"q": "dependency"})
    assert [r.child_id for r in response.context["cl"].result_list] == ["C2"]
    response = console.get(ANALYSES, {"merge_strategy": "NO_MERGE"})
    assert [a.fan_out for a in response.context["cl"].result_list] == [fan_out]
    response = console.get(ANALYSES, {"merge_strategy": "MERGE_ALL"})
    assert list(response.context["cl"].result_list) == []


def test_reports_and_analyses_cannot_be_typed_in(console):
    assert console.get(reverse("admin:children_childreport_add")).status_code == 403
    assert (
        console.get(reverse("admin:children_completionanalysis_add")).status_code == 403
    )
    assert console.get(reverse("admin:children_fanout_add")).status_code == 403


def test_analyse_now_runs_the_manual_override_as_the_operator(console):
    fan_out = make_fan_out(3)
    post(fan_out, "🤖 Child C1 complete: PR #10")
    response = console.post(
        FAN_OUTS, {"action": "analyse_now", "_selected_action": [fan_out.pk]}
    )
    assert response.status_code == 302
    fan_out.refresh_from_db()
    assert fan_out.state == "complete"
    assert fan_out.analysis.trigger == "manual"
    assert fan_out.analysis.discrepancy == "underflow"
    triggered = fan_out.parent.events.get(data__event="ANALYSIS_TRIGGERED")
    assert triggered.actor == "user:alice"
