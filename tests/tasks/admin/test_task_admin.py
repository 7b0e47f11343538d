"""The task pages of the operator console."""

from __future__ import annotations

import re

import pytest
from django.contrib.messages import get_messages
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from codex.events.models import Event
from codex.tasks.models import Task
from tests.admin_forms import form_data
from tests.factories import make_task, put_in_state

pytestmark = pytest.mark.django_db

CHANGELIST = reverse("admin:tasks_task_changelist")


def change_url(task: Task) -> str:
    return reverse("admin:tasks_task_change", args=[task.pk])


def messages_of(response) -> list[str]:
    return [str(message) for message in get_messages(response.wsgi_request)]


def transition_buttons(html: str) -> set[str]:
    return set(
        re.findall(r'name="_fsm_transition_to"\s+value="([a-z_]+)"', html, flags=re.S)
    )


def post_transition(console, task: Task, name: str):
    """Click the transition button `name` on the task's change page."""
    page = console.get(change_url(task))
    assert page.status_code == 200
    data = form_data(page.content.decode(), "task_form")
    data["_fsm_transition_to"] = [name]
    return console.post(change_url(task), data)


# -- changelist -----------------------------------------------------------------


def test_changelist_renders_tasks(console):
    tasks = [make_task(title=f"Feature {n}") for n in range(3)]
    response = console.get(CHANGELIST)
    assert response.status_code == 200
    html = response.content.decode()
    for task in tasks:
        assert task.task_id in html
    assert "Feature 2" in html


def test_changelist_filters_by_status(console):
    blocked = put_in_state(make_task(), status="blocked")
    pending = make_task()
    response = console.get(CHANGELIST, {"status": "blocked"})
    assert response.status_code == 200
    shown = list(response.context["cl"].result_list)
    assert shown == [blocked]
    assert pending.task_id not in response.content.decode()


def test_changelist_searches(console):
    first, second = make_task(title="Dark mode"), make_task(title="Export CSV")
    response = console.get(CHANGELIST, {"q": "FEAT"})
    assert response.status_code == 200
    assert set(response.context["cl"].result_list) == {first, second}
    response = console.get(CHANGELIST, {"q": second.task_id})
    assert list(response.context["cl"].result_list) == [second]
    response = console.get(CHANGELIST, {"q": "dark"})
    assert list(response.context["cl"].result_list) == [first]


def test_changelist_query_count_does_not_grow(console, django_assert_max_num_queries):
    for n in range(5):
        put_in_state(make_task(), status="in_progress").acquire_lease(f"w:{n}")
    console.get(CHANGELIST)
    with CaptureQueriesContext(connection) as five:
        response = console.get(CHANGELIST)
    assert len(response.context["cl"].result_list) == 5
    for n in range(35):
        put_in_state(make_task(), status="in_progress").acquire_lease(f"v:{n}")
    with django_assert_max_num_queries(len(five.captured_queries)):
        response = console.get(CHANGELIST)
    assert len(response.context["cl"].result_list) == 40


def test_add_page_is_refused(console):
    assert console.get(reverse("admin:tasks_task_add")).status_code == 403


def test_changelist_needs_a_staff_login(client):
    response = client.get(CHANGELIST)
    assert response.status_code == 302
    assert "/admin/login/" in response["Location"]


# -- change page and transitions --------------------------------------------------


@pytest.mark.parametrize(
    ("status", "buttons"),
    [
        ("in_progress", {"pause", "cancel", "fail"}),
        ("paused", {"resume", "cancel"}),
        ("pending", {"cancel"}),
        ("completed", set()),
    ],
)
def test_change_page_offers_the_operator_transitions(console, status, buttons):
    task = put_in_state(make_task(), status=status)
    response = console.get(change_url(task))
    assert response.status_code == 200
    html = response.content.decode()
    assert task.task_id in html
    assert transition_buttons(html) == buttons


def test_change_page_shows_the_event_history(console):
    task = make_task()
    html = console.get(change_url(task)).content.decode()
    assert "History (event log)" in html
    assert "task created" in html


def test_pause_button_pauses_and_logs_the_operator(console, operator):
    task = put_in_state(make_task(), status="in_progress", phase="planning")
    response = post_transition(console, task, "pause")
    assert response.status_code == 302, response.content.decode()[:2000]
    assert response["Location"] == change_url(task)
    task.refresh_from_db()
    assert task.status == "paused"
    assert task.phase == "planning"
    assert task.lease_holder is None
    [event] = task.events.filter(kind="transition", field="status")
    assert (event.source, event.target) == ("in_progress", "paused")
    assert event.actor == f"user:{operator.username}"
    assert any("status is now paused" in m for m in messages_of(response))


def test_resume_and_cancel_buttons(console, operator):
    task = put_in_state(make_task(), status="paused")
    assert post_transition(console, task, "resume").status_code == 302
    task.refresh_from_db()
    assert task.status == "in_progress"
    assert post_transition(console, task, "cancel").status_code == 302
    task.refresh_from_db()
    assert task.status == "cancelled"
    actors = set(task.events.filter(kind="transition").values_list("actor", flat=True))
    assert actors == {f"user:{operator.username}"}


def test_disallowed_transition_is_reported_not_applied(console):
    task = put_in_state(make_task(), status="in_progress")
    response = post_transition(console, task, "resume")
    assert response.status_code == 302
    task.refresh_from_db()
    assert task.status == "in_progress"
    assert not task.events.filter(kind="transition").exists()
    assert any("not allowed" in m for m in messages_of(response))


def test_plain_save_of_the_change_form_redirects(console):
    task = put_in_state(make_task(), status="in_progress")
    page = console.get(change_url(task))
    data = form_data(page.content.decode(), "task_form")
    data["_save"] = ["Save"]
    response = console.post(change_url(task), data)
    assert response.status_code == 302
    task.refresh_from_db()
    assert task.status == "in_progress"


def post_while_leased(console, task: Task, extra: dict) -> object:
    page = console.get(change_url(task))
    data = form_data(page.content.decode(), "task_form")
    Task.objects.get(pk=task.pk).acquire_lease("worker:x")  # a worker picks it up
    data.update(extra)
    console.raise_request_exception = False
    return console.post(change_url(task), data)


def test_transition_under_someone_elses_lease_is_reported(console):
    task = put_in_state(make_task(), status="in_progress")
    response = post_while_leased(console, task, {"_fsm_transition_to": ["pause"]})
    task.refresh_from_db()
    assert task.status == "in_progress"
    assert task.lease_holder == "worker:x"
    assert not task.events.filter(kind="transition").exists()
    assert response.status_code == 302
    assert any("when that step ends" in m for m in messages_of(response))
    assert task.control_requests.pending().get().requested_by == "user:alice"


def test_plain_save_under_someone_elses_lease_is_not_a_server_error(console):
    task = put_in_state(make_task(), status="in_progress")
    response = post_while_leased(console, task, {"_save": ["Save"]})
    assert response.status_code in (200, 302)


@pytest.mark.parametrize("name", ["no_such_transition", "save"])
def test_unknown_transition_name_is_not_a_server_error(console, name):
    task = put_in_state(make_task(), status="in_progress")
    console.raise_request_exception = False
    response = post_transition(console, task, name)
    assert response.status_code == 302
    task.refresh_from_db()
    assert task.status == "in_progress"


def test_hidden_transition_cannot_be_posted(console):
    task = make_task()
    page = console.get(change_url(task)).content.decode()
    assert "start" not in transition_buttons(page)
    post_transition(console, task, "start")
    task.refresh_from_db()
    assert task.status == "pending"


def test_hidden_transition_with_arguments_is_not_a_server_error(console):
    task = put_in_state(make_task(), status="in_progress")
    console.raise_request_exception = False
    response = post_transition(console, task, "block")
    assert response.status_code == 302
    task.refresh_from_db()
    assert task.status == "in_progress"


# -- force_break_lease action --------------------------------------------------------


def test_force_break_lease_action(console, operator):
    held = put_in_state(make_task(), status="in_progress")
    held.acquire_lease("worker:x")
    free = make_task()
    response = console.post(
        CHANGELIST,
        {
            "action": "force_break_lease",
            "_selected_action": [held.pk, free.pk],
            "index": "0",
        },
    )
    assert response.status_code == 302
    held.refresh_from_db()
    assert held.lease_holder is None
    assert held.lease_expires_at is None
    assert held.status == "in_progress"
    [event] = held.events.filter(kind="lease")
    assert event.actor == f"user:{operator.username}"
    assert event.data == {"action": "force_break", "previous_holder": "worker:x"}
    assert "operator" in event.reason
    assert not free.events.filter(kind="lease").exists()
    assert "Broke 1 lease(s)." in messages_of(response)
    # The task can be acted on again at once.
    assert post_transition(console, held, "pause").status_code == 302
    held.refresh_from_db()
    assert held.status == "paused"


def test_force_break_lease_with_no_lease_does_nothing(console):
    task = make_task()
    response = console.post(
        CHANGELIST,
        {"action": "force_break_lease", "_selected_action": [task.pk], "index": "0"},
    )
    assert response.status_code == 302
    assert "Broke 0 lease(s)." in messages_of(response)
    assert not Event.objects.filter(kind="lease").exists()


def test_the_change_page_shows_phases_and_agent_runs(console, scripted_runner):
    from codex.fleet.models import AgentRun
    from codex.tasks.jobs import advance_task

    task = make_task()
    advance_task(task.task_id)
    run = AgentRun.objects.get(task=task)
    page = console.get(change_url(task)).content.decode()
    assert run.session_id in page
    assert "<th>agent runs</th>" in page
    assert "<td>intake</td><td>completed</td>" in page
