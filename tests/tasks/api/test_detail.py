"""GET /api/tasks/{task_id}/."""

from __future__ import annotations

import pytest

from tests.core.api.conftest import assert_error_shape
from tests.factories import make_task, put_in_state

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("status", "actions"),
    [
        ("pending", ["cancel"]),
        ("in_progress", ["pause", "cancel"]),
        ("paused", ["resume", "cancel"]),
        ("blocked", ["cancel", "retry"]),
        ("failed", ["retry"]),
        ("completed", []),
        ("cancelled", []),
    ],
)
def test_detail_has_available_actions(api_client, status, actions):
    task = put_in_state(make_task(), status=status)
    response = api_client.get(f"/api/tasks/{task.task_id}/")
    assert response.status_code == 200, response.content
    data = response.json()
    assert data["task_id"] == task.task_id
    assert data["status"] == status
    assert sorted(data["available_actions"]) == sorted(actions)
    assert "phase_progress" in data
    assert data["errors"] == []


def test_detail_shows_an_active_lease(api_client):
    task = put_in_state(make_task(), status="in_progress")
    task.acquire_lease("worker:x")
    lease = api_client.get(f"/api/tasks/{task.task_id}/").json()["lease"]
    assert lease["holder"] == "worker:x"
    assert lease["expires_at"]


@pytest.mark.parametrize(
    "task_id", ["FEAT-20240101-zzzzzz", "nonsense", "FEAT-20240101-ZZZZZZ"]
)
def test_unknown_task_is_404_in_the_error_shape(api_client, task_id):
    make_task()
    error = assert_error_shape(api_client.get(f"/api/tasks/{task_id}/"), 404)
    assert error["code"] == "not_found"
    assert error["fields"] == {}


def test_detail_requires_authentication(client):
    task = make_task()
    assert_error_shape(client.get(f"/api/tasks/{task.task_id}/"), 401)
