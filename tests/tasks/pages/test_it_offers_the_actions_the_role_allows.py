"""The task page's buttons: an operator retries, pauses, resumes and cancels a
task through the same model calls as the API; a team member sees no button and
gets 403 for each action; a stale button gets a message, not an error."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse

from codex.tasks.models import Task
from tests.factories import make_task, make_user

pytestmark = pytest.mark.django_db

ACTIONS = ("retry", "pause", "resume", "cancel")


def action_url(task: Task, action: str) -> str:
    return reverse("pages:task_action", args=[task.task_id, action])


def task_page(client, task: Task) -> str:
    return client.get(reverse("pages:task", args=[task.task_id])).content.decode()


@pytest.fixture
def operator_client(client, operator):
    client.force_login(operator)
    return client


def blocked_task() -> Task:
    task = make_task(title="Blocked on the forge")
    task.perform("start", by="worker:w1")
    task.perform(
        "block",
        by="worker:w1",
        reason="forge down",
        retry_after=timedelta(hours=1),
        exit_code=124,
    )
    return task


@pytest.mark.parametrize("action", ACTIONS)
def test_a_member_without_the_right_gets_403_and_nothing_changes(member_client, action):
    task = make_task()
    task.perform("start", by="worker:w1")

    response = member_client.post(action_url(task, action))

    assert response.status_code == 403
    task.refresh_from_db()
    assert task.status == "in_progress"


def test_a_member_sees_no_buttons(member_client):
    task = make_task()
    task.perform("start", by="worker:w1")

    assert "data-confirm" not in task_page(member_client, task)


def test_an_integrator_gets_403_too(client):
    client.force_login(make_user("ian", role="integrator"))
    task = make_task()

    assert client.post(action_url(task, "cancel")).status_code == 403


def test_the_operator_sees_the_buttons_the_state_allows_with_a_question(
    operator_client,
):
    task = blocked_task()

    html = task_page(operator_client, task)

    assert f'action="{action_url(task, "retry")}"' in html
    assert f'action="{action_url(task, "cancel")}"' in html
    assert f'action="{action_url(task, "pause")}"' not in html
    assert f"Cancel {task.task_id}? A cancelled task cannot be resumed." in html
    assert 'name="csrfmiddlewaretoken"' in html


def test_retry_unblocks_now_and_says_so(operator_client, operator):
    task = blocked_task()

    response = operator_client.post(action_url(task, "retry"), follow=True)

    task.refresh_from_db()
    assert task.status == "in_progress"
    assert task.events.filter(actor=f"user:{operator.username}").exists()
    assert f"Task {task.task_id}: retry done" in response.content.decode()


def test_pause_resume_and_cancel(operator_client):
    task = make_task()
    task.perform("start", by="worker:w1")

    operator_client.post(action_url(task, "pause"))
    task.refresh_from_db()
    assert task.status == "paused"

    operator_client.post(action_url(task, "resume"))
    task.refresh_from_db()
    assert task.status == "in_progress"

    operator_client.post(action_url(task, "cancel"), {"reason": "not needed\x00"})
    task.refresh_from_db()
    assert task.status == "cancelled"
    assert task.events.filter(reason="not needed").exists()


def test_a_failed_task_retries_as_a_new_task(operator_client):
    task = make_task(title="Try again")
    task.perform("start", by="worker:w1")
    task.perform("fail", by="worker:w1", reason="gave up")

    response = operator_client.post(action_url(task, "retry"))

    new_task = Task.objects.exclude(pk=task.pk).get()
    assert response.status_code == 302
    assert response["Location"] == reverse("pages:task", args=[new_task.task_id])
    assert new_task.title == "Try again"


def test_a_stale_button_gets_a_message_not_an_error(operator_client):
    task = make_task()
    task.perform("start", by="worker:w1")
    task.perform("cancel", by="user:someone", reason="meanwhile")

    response = operator_client.post(action_url(task, "pause"), follow=True)

    assert response.status_code == 200
    assert "is cancelled now and cannot pause; nothing was changed" in (
        response.content.decode()
    )


def test_an_unknown_action_or_a_get_is_refused(operator_client):
    task = make_task()

    assert operator_client.post(f"/tasks/{task.task_id}/delete/").status_code == 404
    assert operator_client.get(action_url(task, "cancel")).status_code == 405
    assert (
        operator_client.post(action_url(Task(task_id="NOPE-1"), "cancel")).status_code
        == 404
    )
