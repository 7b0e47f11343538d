"""The operator console's task actions: retry, cancel, and the way to the queue.

Every action goes through the model methods, so it is leased and logged.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.messages import get_messages
from django.urls import reverse
from django.utils import timezone

from codex.tasks.models import ControlRequest, Task
from tests.factories import make_task, put_in_state

pytestmark = pytest.mark.django_db

CHANGELIST = reverse("admin:tasks_task_changelist")


def messages_of(response) -> list[str]:
    return [str(message) for message in get_messages(response.wsgi_request)]


def run_action(console, action: str, *tasks: Task):
    response = console.post(
        CHANGELIST,
        {
            "action": action,
            "_selected_action": [task.pk for task in tasks],
            "index": "0",
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    return response


def status_events(task: Task):
    return list(task.events.filter(kind="transition", field="status").order_by("id"))


# -- retry ------------------------------------------------------------------------


def test_retry_unblocks_a_blocked_task_now_and_logs_the_operator(console, operator):
    task = put_in_state(
        make_task(),
        status="blocked",
        phase="planning",
        blocked_reason="rate limited",
        blocked_until=timezone.now() + timedelta(hours=1),
    )
    response = run_action(console, "retry_tasks", task)
    task.refresh_from_db()
    assert task.status == "in_progress"
    assert task.phase == "planning"
    assert task.blocked_until is None
    assert task.lease_holder is None
    [event] = status_events(task)
    assert (event.source, event.target) == ("blocked", "in_progress")
    assert event.actor == f"user:{operator.username}"
    assert messages_of(response) == [f"Retried 1 task(s): {task.task_id} unblocked."]


def test_retry_of_a_failed_task_creates_a_linked_new_task_once(console):
    failed = put_in_state(make_task(title="Dark mode"), status="failed")
    response = run_action(console, "retry_tasks", failed)
    failed.refresh_from_db()
    assert failed.status == "failed"  # terminal states stay terminal
    new = Task.objects.exclude(pk=failed.pk).get()
    assert new.title == "Dark mode"
    assert new.status == "pending"
    assert messages_of(response) == [
        f"Retried 1 task(s): {failed.task_id} retried as {new.task_id}."
    ]
    again = run_action(console, "retry_tasks", failed)
    assert Task.objects.count() == 2
    assert "already retried as" in messages_of(again)[-1]


@pytest.mark.parametrize("status", ["pending", "in_progress", "completed"])
def test_retry_refuses_other_states_and_changes_nothing(console, status):
    task = put_in_state(make_task(), status=status)
    response = run_action(console, "retry_tasks", task)
    task.refresh_from_db()
    assert task.status == status
    assert Task.objects.count() == 1
    assert messages_of(response) == [
        f"{task.task_id}: a {task.get_status_display().lower()} task cannot be retried."
    ]


def test_retry_under_a_workers_lease_is_reported(console):
    task = put_in_state(make_task(), status="blocked")
    task.acquire_lease("worker:x")
    response = run_action(console, "retry_tasks", task)
    task.refresh_from_db()
    assert task.status == "blocked"
    [message] = messages_of(response)
    assert message.startswith(f"{task.task_id}: not retried:")
    assert "worker:x" in message


# -- cancel -----------------------------------------------------------------------


def test_cancel_cancels_now_when_no_worker_holds_the_task(console, operator):
    first = put_in_state(make_task(), status="in_progress", phase="planning")
    second = make_task()
    response = run_action(console, "cancel_tasks", first, second)
    for task in (first, second):
        task.refresh_from_db()
        assert task.status == "cancelled"
        assert task.finished_at is not None
        [event] = status_events(task)
        assert event.target == "cancelled"
        assert event.actor == f"user:{operator.username}"
    assert messages_of(response) == [
        f"Cancelled 2 task(s): {first.task_id}, {second.task_id}."
    ]


def test_cancel_is_deferred_while_a_worker_is_in_a_step(console, operator):
    task = put_in_state(make_task(), status="in_progress")
    task.acquire_lease("worker:x")
    response = run_action(console, "cancel_tasks", task)
    task.refresh_from_db()
    assert task.status == "in_progress"
    assert task.lease_holder == "worker:x"
    [request] = ControlRequest.objects.filter(task=task)
    assert request.action == "cancel"
    assert request.requested_by == f"user:{operator.username}"
    assert messages_of(response) == [
        f"{task.task_id}: a worker is in a step; the cancellation will happen "
        "when that step ends."
    ]


def test_cancel_of_a_finished_task_is_refused(console):
    task = put_in_state(make_task(), status="completed")
    response = run_action(console, "cancel_tasks", task)
    task.refresh_from_db()
    assert task.status == "completed"
    assert messages_of(response) == [
        f"{task.task_id}: a completed task cannot be cancelled."
    ]


# -- the way to django-q2's queue and failures -------------------------------------


def test_task_change_page_links_the_job_queue_and_failures(console):
    task = make_task()
    html = console.get(reverse("admin:tasks_task_change", args=[task.pk])).content
    html = html.decode()
    assert "Background jobs" in html
    assert reverse("admin:django_q_failure_changelist") in html
    assert reverse("admin:django_q_schedule_changelist") in html
    # The ORM broker (the default without Redis) has a queue page; link it.
    try:
        queue = reverse("admin:django_q_ormq_changelist")
    except Exception:  # noqa: BLE001 - Redis broker: no queue model
        queue = None
    if queue:
        assert queue in html


def test_admin_index_lists_the_queue_and_failures(console):
    html = console.get(reverse("admin:index")).content.decode()
    assert reverse("admin:django_q_failure_changelist") in html
    for url in (
        reverse("admin:django_q_failure_changelist"),
        reverse("admin:django_q_success_changelist"),
    ):
        assert console.get(url).status_code == 200


def test_actions_are_offered_on_the_change_list(console):
    html = console.get(CHANGELIST).content.decode()
    for name in ("retry_tasks", "cancel_tasks", "force_break_lease"):
        assert f'value="{name}"' in html
