"""POST /api/tasks/{task_id}/{pause|resume|cancel}/."""

from __future__ import annotations

import pytest
from django_q.models import OrmQ

from codex.events.models import Event
from codex.tasks.models import Task
from tests.core.api.conftest import assert_error_shape
from tests.factories import make_task, make_user, put_in_state

pytestmark = pytest.mark.django_db


@pytest.fixture
def api_user(db):
    """Controlling a task is for operators (codex.accounts.permissions)."""
    return make_user("ops", is_staff=True)


def control(client, task_id: str, action: str, reason: str | None = None):
    data = {} if reason is None else {"reason": reason}
    return client.post(f"/api/tasks/{task_id}/{action}/", data, format="json")


def status_events(task: Task) -> list[Event]:
    return list(task.events.filter(kind="transition", field="status"))


def test_pause_an_in_progress_task(api_client, api_user):
    task = put_in_state(make_task(), status="in_progress", phase="implementation")
    response = control(api_client, task.task_id, "pause", "waiting for the design")
    assert response.status_code == 200, response.content
    data = response.json()
    assert data["status"] == "paused"
    assert data["phase"] == "implementation"
    assert sorted(data["available_actions"]) == ["cancel", "resume"]
    assert data["lease"] is None
    task.refresh_from_db()
    assert task.status == "paused"
    assert task.lease_holder is None
    [event] = status_events(task)
    assert (event.source, event.target) == ("in_progress", "paused")
    assert event.actor == f"api:{api_user.username}"
    assert event.reason == "waiting for the design"


def test_pause_without_a_reason_uses_the_default(api_client):
    task = put_in_state(make_task(), status="in_progress")
    assert control(api_client, task.task_id, "pause").status_code == 200
    [event] = status_events(task)
    assert event.reason == "paused on request"


def test_resume_a_paused_task(api_client, api_user):
    task = put_in_state(make_task(), status="paused", phase="review")
    response = control(api_client, task.task_id, "resume", "design arrived")
    assert response.status_code == 200, response.content
    assert response.json()["status"] == "in_progress"
    task.refresh_from_db()
    assert task.status == "in_progress"
    [event] = status_events(task)
    assert (event.source, event.target) == ("paused", "in_progress")
    assert event.actor == f"api:{api_user.username}"
    assert event.reason == "design arrived"


def test_resume_enqueues_the_next_step(api_client, django_capture_on_commit_callbacks):
    task = put_in_state(make_task(), status="paused")
    before = OrmQ.objects.count()
    with django_capture_on_commit_callbacks() as callbacks:
        assert control(api_client, task.task_id, "resume").status_code == 200
    # The ORM broker (the test settings' broker) writes the job row in the
    # transition's transaction rather than after its commit.
    assert callbacks == []
    assert OrmQ.objects.count() == before + 1


@pytest.mark.parametrize("status", ["pending", "in_progress", "paused", "blocked"])
def test_cancel(api_client, api_user, status):
    task = put_in_state(make_task(), status=status)
    response = control(api_client, task.task_id, "cancel", "no longer needed")
    assert response.status_code == 200, response.content
    data = response.json()
    assert data["status"] == "cancelled"
    assert data["available_actions"] == []
    assert data["finished_at"]
    task.refresh_from_db()
    assert task.status == "cancelled"
    [event] = status_events(task)
    assert event.target == "cancelled"
    assert event.actor == f"api:{api_user.username}"
    assert event.reason == "no longer needed"


@pytest.mark.parametrize(
    ("status", "action", "allowed"),
    [
        ("pending", "pause", ["cancel"]),
        ("pending", "resume", ["cancel"]),
        ("in_progress", "resume", ["pause", "cancel"]),
        ("paused", "pause", ["resume", "cancel"]),
        ("completed", "pause", []),
        ("completed", "cancel", []),
        ("cancelled", "resume", []),
    ],
)
def test_disallowed_transition_is_409(api_client, status, action, allowed):
    task = put_in_state(make_task(), status=status)
    error = assert_error_shape(
        control(api_client, task.task_id, action), 409, "transition_not_allowed"
    )
    assert sorted(error["allowed_actions"]) == sorted(allowed)
    assert error["status"] == status
    task.refresh_from_db()
    assert task.status == status
    assert task.lease_holder is None
    assert status_events(task) == []


@pytest.mark.parametrize("action", ["pause", "cancel"])
def test_pause_or_cancel_while_a_worker_is_in_a_step_is_deferred(api_client, action):
    """Issue 4: pause and cancel take effect at the next step boundary."""
    task = put_in_state(make_task(), status="in_progress")
    task.acquire_lease("worker:x")
    response = control(api_client, task.task_id, action, reason="stop please")
    assert response.status_code == 202
    assert response.json()["deferred"]["action"] == action
    task.refresh_from_db()
    assert task.status == "in_progress"
    assert task.lease_holder == "worker:x"
    assert status_events(task) == []
    request = task.control_requests.pending().get()
    assert (request.action, request.requested_by, request.reason) == (
        action,
        "api:ops",
        "stop please",
    )
    # Asking twice keeps one request.
    assert control(api_client, task.task_id, action).status_code == 202
    assert task.control_requests.pending().count() == 1


def test_resume_while_leased_is_409(api_client):
    task = put_in_state(make_task(), status="paused")
    task.acquire_lease("worker:x")
    error = assert_error_shape(
        control(api_client, task.task_id, "resume"), 409, "lease_held"
    )
    assert error["lease_holder"] == "worker:x"
    assert task.control_requests.count() == 0


def test_a_deferred_pause_of_a_task_that_cannot_pause_is_409(api_client):
    task = put_in_state(make_task(), status="blocked")
    task.acquire_lease("worker:x")
    assert_error_shape(
        control(api_client, task.task_id, "pause"), 409, "transition_not_allowed"
    )
    assert task.control_requests.count() == 0


def test_expired_lease_of_another_does_not_block(api_client, settings):
    task = put_in_state(make_task(), status="in_progress")
    settings.CODEX_LEASE_SECONDS = -1  # the lease expires at once
    task.acquire_lease("worker:gone")
    settings.CODEX_LEASE_SECONDS = 60
    response = control(api_client, task.task_id, "pause")
    assert response.status_code == 200, response.content
    assert response.json()["status"] == "paused"


@pytest.mark.parametrize("action", ["pause", "resume", "cancel"])
def test_unknown_task_is_404(api_client, action):
    error = assert_error_shape(
        control(api_client, "FEAT-20240101-nope00", action), 404, "not_found"
    )
    assert error["fields"] == {}


def test_reason_too_long_is_400(api_client):
    task = put_in_state(make_task(), status="in_progress")
    error = assert_error_shape(
        control(api_client, task.task_id, "pause", "x" * 2001), 400, "invalid"
    )
    assert "reason" in error["fields"]
    task.refresh_from_db()
    assert task.status == "in_progress"


def test_control_requires_authentication(client):
    task = put_in_state(make_task(), status="in_progress")
    response = client.post(f"/api/tasks/{task.task_id}/pause/")
    assert_error_shape(response, 401)
    task.refresh_from_db()
    assert task.status == "in_progress"


def test_get_is_not_allowed(api_client):
    task = make_task()
    response = api_client.get(f"/api/tasks/{task.task_id}/pause/")
    assert_error_shape(response, 405, "method_not_allowed")
