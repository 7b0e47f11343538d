"""State fields are cleared when they no longer apply: a blocked task that is
cancelled or fails keeps no blocked_reason or blocked_until."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from tests.core.api.conftest import role_client
from tests.factories import make_task, put_in_state

pytestmark = pytest.mark.django_db


def blocked_task():
    return put_in_state(
        make_task(),
        status="blocked",
        phase="implementation",
        blocked_reason="GitHub answered 502",
        blocked_until=timezone.now() + timedelta(minutes=5),
    )


def test_cancelling_a_blocked_task_clears_its_block():
    task = blocked_task()
    response = role_client("operator").post(
        f"/api/tasks/{task.task_id}/cancel/", {}, format="json"
    )
    assert response.status_code == 200, response.content
    assert response.json()["blocked_reason"] == ""
    task.refresh_from_db()
    assert task.status == "cancelled"
    assert task.blocked_reason == ""
    assert task.blocked_until is None


def test_failing_a_blocked_task_clears_its_block():
    task = blocked_task()
    task.change_and_save("test", lambda: task.fail(by="test", reason="gave up"))
    task.refresh_from_db()
    assert task.status == "failed"
    assert task.blocked_reason == ""
    assert task.blocked_until is None
