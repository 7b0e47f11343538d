"""POST /api/tasks/{id}/approve/, /request-changes/ and /steer/ (docs/gates.md):
who may decide (the team, not the requester alone, not an integrator), the
refusals with their reasons, and the plan_approval field of a new task."""

from __future__ import annotations

import pytest

from codex.tasks.models import Status
from tests.core.api.conftest import assert_error_shape, token_client
from tests.factories import (
    make_repository,
    make_task,
    make_user,
    put_in_state,
    waiting_for_plan_approval,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def requester():
    return make_user("rita", role="team")


@pytest.fixture
def waiting(requester):
    return waiting_for_plan_approval(make_task(requested_by=requester))


def url(task, action: str) -> str:
    return f"/api/tasks/{task.task_id}/{action}/"


def test_a_team_member_approves_the_current_plan(api_client, waiting):
    response = api_client.post(
        url(waiting, "approve"), {"subject": waiting.open_gate.subject}, format="json"
    )
    assert response.status_code == 200, response.content
    assert (response.json()["status"], response.json()["phase"]) == (
        "in_progress",
        "implementation",
    )
    waiting.refresh_from_db()
    assert waiting.gates.get().decided_by == "user:member"


def test_the_requester_alone_gets_403_with_the_reason(requester, waiting):
    response = token_client(requester).post(
        url(waiting, "approve"), {"subject": waiting.open_gate.subject}, format="json"
    )
    error = assert_error_shape(response, 403)
    assert "requester" in error["message"]
    waiting.refresh_from_db()
    assert waiting.status == "escalated"


def test_an_integrator_may_not_decide(waiting):
    client = token_client(make_user("ivan", role="integrator"))
    response = client.post(
        url(waiting, "approve"), {"subject": waiting.open_gate.subject}, format="json"
    )
    assert response.status_code == 403


def test_a_stale_plan_is_a_409_naming_the_current_version(api_client, waiting):
    response = api_client.post(
        url(waiting, "approve"), {"subject": "deadbeefdeadbeef"}, format="json"
    )
    error = assert_error_shape(response, 409, "gate_refused")
    assert "current version" in error["message"]


def test_a_plan_approval_must_name_the_version(api_client, waiting):
    response = api_client.post(url(waiting, "approve"), {}, format="json")
    error = assert_error_shape(response, 409)
    assert waiting.open_gate.subject in error["message"]


def test_request_changes_sends_the_text_back(api_client, waiting):
    response = api_client.post(
        url(waiting, "request-changes"),
        {"subject": waiting.open_gate.subject, "feedback": "Use the ORM."},
        format="json",
    )
    assert response.status_code == 200, response.content
    waiting.refresh_from_db()
    assert waiting.plan_cycles == 1
    assert waiting.feedback_history["plan"][0]["feedback"] == {
        "message": "Use the ORM."
    }


def test_approving_a_task_that_does_not_wait_is_a_409(api_client):
    task = make_task()
    response = api_client.post(url(task, "approve"), {}, format="json")
    assert_error_shape(response, 409, "gate_refused")


def test_steer_stores_the_message_with_its_author(api_client):
    task = make_task()
    response = api_client.post(
        url(task, "steer"), {"message": "Prefer the existing helpers."}, format="json"
    )
    assert response.status_code == 201, response.content
    message = task.steering_messages.get()
    assert (message.author, message.source, message.delivered_at) == (
        "user:member",
        "api",
        None,
    )
    assert task.events.filter(kind="control", actor="user:member").exists()


@pytest.mark.parametrize("body", [{"message": ""}, {"message": "x" * 4001}, {}])
def test_steer_refuses_bad_input_with_a_400(api_client, body):
    task = make_task()
    response = api_client.post(url(task, "steer"), body, format="json")
    assert response.status_code == 400


def test_steer_on_an_ended_task_is_a_409(api_client):
    task = put_in_state(make_task(), Status.CANCELLED)
    response = api_client.post(url(task, "steer"), {"message": "hi"}, format="json")
    assert_error_shape(response, 409)


def test_an_integrator_may_not_steer():
    task = make_task()
    client = token_client(make_user("ivan", role="integrator"))
    response = client.post(url(task, "steer"), {"message": "hi"}, format="json")
    assert response.status_code == 403


def test_a_new_task_may_ask_for_plan_approval(api_client):
    repository = make_repository()
    response = api_client.post(
        "/api/tasks/",
        {"repository": repository.url, "title": "Add search", "plan_approval": True},
        format="json",
    )
    assert response.status_code == 201, response.content
    from codex.tasks.models import Task

    assert Task.objects.get(task_id=response.json()["task_id"]).plan_approval_required


def test_the_task_says_what_it_waits_for(api_client, waiting):
    body = api_client.get(f"/api/tasks/{waiting.task_id}/").json()
    assert body["status"] == "escalated"
    assert body["waiting_for"]["kind"] == "plan"
    assert body["waiting_for"]["subject"] == waiting.open_gate.subject
    assert body["waiting_for"]["reason"] == "the plan waits"
    other = make_task()
    assert api_client.get(f"/api/tasks/{other.task_id}/").json()["waiting_for"] is None
