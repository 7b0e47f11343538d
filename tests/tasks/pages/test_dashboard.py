"""The dashboard: its numbers match the data, in a fixed number of queries."""

from __future__ import annotations

import itertools
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from codex.fleet.models import AgentRun
from codex.tasks.pages import dashboard
from tests.factories import make_task, put_in_state

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _no_cached_history_totals():
    """The history's totals are cached for a minute; each test starts without."""
    dashboard.forget_history_totals()
    yield
    dashboard.forget_history_totals()


TODAY = date(2026, 3, 20)
_sessions = itertools.count(1)


def completed(day: date, cycles=(0, 0), merged=True, hour=12):
    return put_in_state(
        make_task(),
        status="completed",
        phase="release",
        finished_at=datetime(day.year, day.month, day.day, hour, tzinfo=UTC),
        pr_merged=merged,
        verification_cycles=cycles[0],
        review_cycles=cycles[1],
    )


def agent_run(task=None, cost="0", failed=False, **counts) -> AgentRun:
    run = AgentRun.objects.begin(
        by="worker:test",
        session_id=f"dash-{next(_sessions)}",
        task=task,
        cost_usd=Decimal(cost),
        **counts,
    )
    if failed:
        run.fail(by="worker:test", error="crashed")
        run.save()
    return run


def escalate(task) -> None:
    task = put_in_state(task, status="in_progress", phase="review")
    task.perform("escalate", by="agent:reviewer", reason="review cycles exhausted")


@pytest.fixture
def data():
    """Three completed (two in the window, one merged earlier), one failed, one
    cancelled, one escalated, two active; runs with costs and health."""
    first = completed(TODAY, cycles=(1, 1))
    second = completed(TODAY - timedelta(days=3), cycles=(2, 0))
    old = completed(TODAY - timedelta(days=30), cycles=(0, 0))
    failed = put_in_state(make_task(), status="failed", phase="verification")
    cancelled = put_in_state(make_task(), status="cancelled")
    escalated = make_task()
    escalate(escalated)
    put_in_state(make_task(), status="in_progress", phase="implementation")
    make_task()  # pending, intake
    # An escalation that was resolved still counts the task as escalated.
    escalate(failed_later := make_task())
    failed_later.resolve_escalation(
        failed_later.escalations.get(), decision="fail", by="user:x"
    )

    agent_run(first, cost="2.000000", tool_count=5, files_changed=3)
    agent_run(second, cost="1.000000", tool_count=40, files_changed=0)  # warning
    agent_run(old, cost="3.000000")
    agent_run(failed, cost="4.000000", failed=True)  # unhealthy
    agent_run(None, cost="0.500000")
    return {"cancelled": cancelled}


def test_numbers_match_the_data(data):
    board = dashboard.build(today=TODAY)

    statuses = {bar.key: bar.value for bar in board.by_status}
    assert statuses == {
        "pending": 1,
        "in_progress": 1,
        "blocked": 0,
        "escalated": 1,
        "paused": 0,
        "completed": 3,
        "failed": 2,
        "cancelled": 1,
    }
    phases = {bar.key: bar.value for bar in board.by_phase if bar.value}
    assert phases == {"intake": 1, "implementation": 1, "review": 1}
    assert board.total_tasks == 9
    assert board.active_tasks == 3
    # Success: 3 completed of 6 finished.
    assert board.success_rate == pytest.approx(50.0)
    # Escalation: 2 of 9 tasks were escalated at some point.
    assert board.escalated_tasks == 2
    assert board.escalation_rate == pytest.approx(200 / 9)
    # Cycles to green: (2 + 2 + 0) / 3 completed tasks.
    assert board.average_cycles_to_green == pytest.approx(4 / 3)
    # Cost: merged tasks' runs 2 + 1 + 3 = 6 over 3 merged PRs; all spend 10.5.
    assert board.merged_pull_requests == 3
    assert board.merged_cost == Decimal("6")
    assert board.cost_per_merged_pr == Decimal("2")
    assert board.total_cost == Decimal("10.5")
    assert board.spend_per_merged_pr == Decimal("3.5")
    assert board.total_runs == 5
    health = {bar.key: bar.value for bar in board.health}
    assert health == {"healthy": 3, "warning": 1, "unhealthy": 1}


def test_throughput_counts_completions_per_day_over_14_days(data):
    board = dashboard.build(today=TODAY)

    assert len(board.throughput) == 14
    assert board.throughput[0].key == (TODAY - timedelta(days=13)).isoformat()
    assert board.throughput[-1].key == TODAY.isoformat()
    per_day = {bar.key: bar.value for bar in board.throughput if bar.value}
    assert per_day == {
        TODAY.isoformat(): 1,
        (TODAY - timedelta(days=3)).isoformat(): 1,
    }
    assert board.completed_in_window == 2
    # Bars are relative to the longest one.
    assert board.throughput[-1].percent == 100
    assert board.throughput[0].percent == 0


def test_day_boundaries_in_utc():
    completed(TODAY, hour=0)
    completed(TODAY - timedelta(days=1), hour=23)
    board = dashboard.build(today=TODAY)
    assert [bar.value for bar in board.throughput[-2:]] == [1, 1]


def test_empty_database_shows_dashes(member_client):
    board = dashboard.build(today=TODAY)
    assert board.success_rate is None
    assert board.escalation_rate is None
    assert board.average_cycles_to_green is None
    assert board.cost_per_merged_pr is None
    content = member_client.get(reverse("pages:dashboard")).content.decode()
    assert "No tasks yet" in content


def test_page_shows_numbers_and_svg_bars(member_client, data):
    response = member_client.get(reverse("pages:dashboard"))

    assert response.status_code == 200
    content = response.content.decode()
    assert "50.0%" in content  # success rate
    assert "22.2%" in content  # escalation rate
    assert "1.33" in content  # cycles to green
    assert "$2.00" in content and "$3.50" in content and "$10.50" in content
    assert "<svg" in content and "<rect" in content
    # Completed is the longest status bar: full width.
    assert 'width="100.00" class="bar-completed"' in content
    assert 'aria-label="Failed: 2"' in content
    assert "<script" not in content  # no JS needed to draw the charts
    assert "http://" not in content.replace("http://www.w3.org", "")


def test_constant_queries(member_client):
    def count_queries() -> int:
        with CaptureQueriesContext(connection) as queries:
            assert member_client.get(reverse("pages:dashboard")).status_code == 200
        return len(queries)

    completed(TODAY)
    agent_run(make_task(), cost="1")
    few = count_queries()
    for offset in range(10):
        task = completed(TODAY - timedelta(days=offset), cycles=(1, 0))
        agent_run(task, cost="1")
        escalate(make_task())
    dashboard.forget_history_totals()
    assert count_queries() == few
    # The session, its user, the user's roles (the nav shows only the links
    # of the role), and the dashboard's seven: active tasks by status and
    # phase, finished tasks by status and merge, escalated tasks, throughput,
    # agent runs, the repositories' monthly caps (docs/gates.md), the latest
    # tasks; and the beating worker clusters (the installation's warnings,
    # codex.fleet.readiness).
    assert few <= 11
    # Within the minute the finished tasks, run totals and caps come from the
    # cache.
    assert count_queries() == few - 3


def test_history_totals_are_a_snapshot_at_most_a_minute_old(member_client, data):
    first = dashboard.build(today=TODAY)
    assert first.total_runs == 5 and first.runs_as_of is not None
    agent_run(None, cost="1.000000")
    cached = dashboard.build(today=TODAY)
    assert (cached.total_runs, cached.runs_as_of) == (5, first.runs_as_of)
    assert dashboard.history_totals(fresh=True).total_cost == Decimal("11.5")
    # The page says how old the snapshot is; the task numbers stay live.
    content = member_client.get(reverse("pages:dashboard")).content.decode()
    assert "as of" in content and "tasks in progress are live" in content


def test_the_work_in_progress_is_live_and_the_finished_tasks_a_snapshot(data):
    """A task that finishes leaves the active counts at once and joins the
    finished ones with the next snapshot: the history is read at most once a
    minute, however long it grows."""
    first = dashboard.build(today=TODAY)
    assert (first.active_tasks, first.completed_tasks) == (3, 3)
    put_in_state(make_task(), status="in_progress", phase="review")
    finishing = dashboard.build(today=TODAY)
    assert finishing.active_tasks == 4
    completed(TODAY)
    cached = dashboard.build(today=TODAY)
    assert (cached.active_tasks, cached.completed_tasks) == (4, 3)
    assert cached.merged_pull_requests == 3
    dashboard.forget_history_totals()
    fresh = dashboard.build(today=TODAY)
    assert (fresh.completed_tasks, fresh.merged_pull_requests) == (4, 4)
    assert fresh.runs_as_of > first.runs_as_of


def test_the_indexes_behind_the_aggregates_exist():
    """Task.Meta declares them (tasks migration 0011 took them into the model
    state); losing one turns an index-only scan back into a scan of the whole
    task table."""
    with connection.cursor() as cursor:
        names = set(connection.introspection.get_constraints(cursor, "tasks_task"))
    assert {"task_dashboard", "task_completed_finished", "task_merged"} <= names


def test_a_wait_at_a_gate_is_not_counted_as_an_escalation():
    from tests.factories import waiting_for_plan_approval

    waiting_for_plan_approval(make_task())
    escalate(make_task())
    board = dashboard.build(today=TODAY)
    assert board.by_status and board.escalated_tasks == 1
    assert board.escalation_rate == pytest.approx(50)
