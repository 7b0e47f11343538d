"""The fleet's operator console: spec 004's dashboard filters, transition
buttons, computed score and health columns, constant query counts."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from codex.events.models import Event
from codex.fleet.models import InstanceStatus, RunStatus
from codex.fleet.tool_events import record_tool_event
from tests.admin_forms import form_data
from tests.factories import make_repository, make_task
from tests.fleet.factories import add_reviews, make_instance, make_run, put_instance_in

pytestmark = pytest.mark.django_db

INSTANCES = reverse("admin:fleet_agentinstance_changelist")
RELATIONSHIPS = reverse("admin:fleet_instancerelationship_changelist")
RUNS = reverse("admin:fleet_agentrun_changelist")


def shown(response) -> list:
    assert response.status_code == 200
    return list(response.context["cl"].result_list)


def add_instances(count: int) -> None:
    repository = make_repository()
    for n in range(count):
        coding = make_instance(
            repository=repository, issue_number=n + 1, task=make_task()
        )
        add_reviews(coding, 1)
        record_tool_event(coding, "create_pr", True)


def add_runs(count: int) -> None:
    for n in range(count):
        make_run(tool_count=30 + n, files_changed=n % 3, closed=n % 2, task=make_task())


@pytest.mark.parametrize(
    ("url", "fill", "rows_per_call"),
    [
        (INSTANCES, add_instances, 2),
        (RELATIONSHIPS, add_instances, 1),
        (RUNS, add_runs, 1),
    ],
)
def test_3_rows_and_30_rows_cost_the_same_queries(
    console, django_assert_max_num_queries, url, fill, rows_per_call
):
    fill(3)
    console.get(url)
    with CaptureQueriesContext(connection) as three:
        assert len(shown(console.get(url))) == 3 * rows_per_call
    fill(27)
    with django_assert_max_num_queries(len(three.captured_queries)):
        assert len(shown(console.get(url))) == 30 * rows_per_call


def test_the_running_filter_hides_terminated_instances(console):
    alive = make_instance()
    gone = put_instance_in(make_instance(), InstanceStatus.TERMINATED)
    assert shown(console.get(INSTANCES, {"running": "yes"})) == [alive]
    assert shown(console.get(INSTANCES, {"running": "no"})) == [gone]


def test_the_review_loop_filters(console):
    repository = make_repository()
    two, three, five = (
        make_instance(repository=repository, issue_number=n) for n in (2, 3, 5)
    )
    for instance, count in ((two, 2), (three, 3), (five, 5)):
        add_reviews(instance, count)
    assert shown(console.get(INSTANCES, {"review_loop": "AT_LIMIT"})) == [five]
    assert shown(console.get(INSTANCES, {"review_loop": "APPROACHING_LIMIT"})) == [
        three
    ]
    assert shown(console.get(INSTANCES, {"review_loop": "multiple"})) == [
        five,
        three,
        two,
    ]
    page = console.get(INSTANCES, {"review_loop": "multiple"}).content.decode()
    assert "AT_LIMIT (iteration 5)" in page


def transition_buttons(html: str) -> set[str]:
    return set(re.findall(r'name="_fsm_transition_to"\s+value="([a-z_]+)"', html))


def test_terminate_from_the_change_page_is_logged_with_the_operator(console):
    instance = make_instance()
    record_tool_event(instance, "request_review", True, git_commit="feedc0de")
    url = reverse("admin:fleet_agentinstance_change", args=[instance.pk])
    page = console.get(url).content.decode()
    assert transition_buttons(page) == {"terminate"}  # tool-driven ones are hidden
    assert "feedc0de" in page  # the tool-call history
    data = form_data(page, "agentinstance_form")
    data["_fsm_transition_to"] = ["terminate"]
    assert console.post(url, data).status_code == 302
    instance.refresh_from_db()
    assert instance.status == InstanceStatus.TERMINATED
    event = Event.objects.filter(subject="instance:work-123-a1").latest("id")
    assert (event.actor, event.target) == ("user:alice", "terminated")


def test_pr_created_instances_offer_merged_closed_and_terminate(console):
    instance = put_instance_in(make_instance(), InstanceStatus.PR_CREATED)
    page = console.get(reverse("admin:fleet_agentinstance_change", args=[instance.pk]))
    assert transition_buttons(page.content.decode()) == {
        "merged",
        "closed",
        "terminate",
    }


def test_runs_show_both_scores_and_health(console):
    make_run(tool_count=45, files_changed=3, closed=1, session_id="session_a")
    low = make_run(tool_count=45, files_changed=0, session_id="session_b")
    page = console.get(RUNS).content.decode()
    assert "0.24" in page  # metrics score (3*2 + 1*5) / 45
    assert "0.29" in page  # productivity score (1*10 + 3) / 45
    assert shown(console.get(RUNS, {"health": "warning"}))[0].session_id == "session_b"
    assert [r.session_id for r in shown(console.get(RUNS, {"health": "healthy"}))] == [
        "session_a"
    ]
    detail = console.get(
        reverse("admin:fleet_agentrun_change", args=[low.pk])
    ).content.decode()
    assert "Low productivity: 45 tool calls but 0 files changed" in detail


def test_mark_failed_from_the_change_page(console):
    run = make_run(status=RunStatus.RUNNING)
    url = reverse("admin:fleet_agentrun_change", args=[run.pk])
    data = form_data(console.get(url).content.decode(), "agentrun_form")
    data["_fsm_transition_to"] = ["fail"]
    console.post(url, data)
    run.refresh_from_db()
    assert (run.status, run.health_status) == (RunStatus.FAILED, "unhealthy")


def test_instances_and_runs_cannot_be_added_by_hand(console):
    assert console.get(reverse("admin:fleet_agentinstance_add")).status_code == 403
    assert console.get(reverse("admin:fleet_agentrun_add")).status_code == 403
