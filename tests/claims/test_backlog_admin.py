"""Operators start backlog runs by adding them, stop them, and watch them in
the list (state, rounds, empty rounds, tasks started and in progress)."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from codex.claims.models import BacklogRun, BacklogState
from codex.events.models import Event
from tests.claims.backlog_helpers import backlog_tasks, cache_open_issues, finish
from tests.claims.factories import make_backlog_run
from tests.factories import make_repository

pytestmark = pytest.mark.django_db

RUNS = reverse("admin:claims_backlogrun_changelist")
ADD = reverse("admin:claims_backlogrun_add")


def test_the_add_page_asks_for_repository_sessions_and_threshold(console):
    response = console.get(ADD)
    assert response.status_code == 200
    assert list(response.context["adminform"].form.fields) == [
        "repository",
        "sessions",
        "threshold",
    ]


def test_adding_a_run_starts_it_and_logs_the_operator(console):
    repository = make_repository()
    response = console.post(
        ADD, {"repository": repository.pk, "sessions": 4, "threshold": 5}
    )
    assert response.status_code == 302
    run = BacklogRun.objects.get()
    assert (run.repository, run.sessions, run.threshold, run.state) == (
        repository,
        4,
        5,
        BacklogState.RUNNING,
    )
    event = Event.objects.get(subject=f"backlog:{run.pk}")
    assert event.actor == "user:alice"
    assert "4 session(s)" in event.reason


def test_a_second_live_run_on_a_repository_is_refused(console):
    live = make_backlog_run(sessions=2)
    response = console.post(
        ADD, {"repository": live.repository.pk, "sessions": 2, "threshold": 3}
    )
    assert response.status_code == 200
    assert "already going" in response.content.decode()
    assert BacklogRun.objects.count() == 1
    live.perform("stop", by="user:alice")
    console.post(ADD, {"repository": live.repository.pk, "sessions": 2, "threshold": 3})
    assert BacklogRun.objects.count() == 2


@pytest.mark.parametrize("sessions", [0, -1])
def test_at_least_one_session(console, sessions):
    repository = make_repository()
    console.post(ADD, {"repository": repository.pk, "sessions": sessions})
    assert not BacklogRun.objects.exists()


def test_the_change_page_is_read_only_with_a_stop_button(console):
    run = make_backlog_run(sessions=2)
    cache_open_issues(run.repository, 1, 2)
    run.play_round()
    page = console.get(reverse("admin:claims_backlogrun_change", args=[run.pk]))
    html = page.content.decode()
    assert page.context["adminform"].form.fields == {}
    assert set(re.findall(r'name="_fsm_transition_to"\s+value="(\w+)"', html)) == {
        "stop"
    }
    for task in backlog_tasks(run):
        assert task.task_id in html


def test_the_stop_action_stops_live_runs_only(console):
    live = make_backlog_run()
    ended = make_backlog_run()
    ended.perform("stop", by="user:bob")
    response = console.post(
        RUNS,
        {"action": "stop_runs", "_selected_action": [live.pk, ended.pk]},
        follow=True,
    )
    assert "Stopped 1 backlog run(s)." in response.content.decode()
    live.refresh_from_db()
    assert (live.state, live.terminated_at is not None) == (
        BacklogState.TERMINATED,
        True,
    )
    last = Event.objects.filter(subject=f"backlog:{live.pk}").last()
    assert (last.actor, last.target) == ("user:alice", "terminated")


def test_the_list_shows_rounds_and_tasks(console):
    run = make_backlog_run(sessions=2)
    cache_open_issues(run.repository, 1, 2, 3)
    run.play_round()
    finish(backlog_tasks(run)[0])
    run.play_round()

    (row,) = console.get(RUNS).context["cl"].result_list
    assert (row.rounds, row.consecutive_empty_rounds) == (2, 0)
    assert (row.started_task_count, row.active_task_count) == (3, 2)


def make_runs_with_tasks(count: int) -> None:
    for _ in range(count):
        run = make_backlog_run(sessions=2)
        cache_open_issues(run.repository, 1, 2)
        run.play_round()


def test_the_list_costs_the_same_for_3_runs_and_30(
    console, django_assert_max_num_queries
):
    make_runs_with_tasks(3)
    with CaptureQueriesContext(connection) as three:
        response = console.get(RUNS)
    assert len(response.context["cl"].result_list) == 3

    make_runs_with_tasks(27)
    with django_assert_max_num_queries(len(three)):
        response = console.get(RUNS)
    assert len(response.context["cl"].result_list) == 30
    assert {run.started_task_count for run in response.context["cl"].result_list} == {2}
