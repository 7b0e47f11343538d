"""Pause and resume in the operator console: actions on the task list (now,
or at the end of the step a worker is in) and buttons on the task's page,
each through the status machine and logged; pause only where the machine
allows it (in progress: a pending task is refused, with why). The task's
page links the team's live page."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from codex.tasks.models import ControlRequest
from tests.factories import make_task, put_in_state
from tests.tasks.admin.test_console_actions import messages_of, run_action
from tests.tasks.admin.test_task_admin import post_transition

pytestmark = pytest.mark.django_db


def button(transition: str, page: str) -> bool:
    """Whether the page has django-fsm's button for `transition`."""
    return bool(re.search(rf'name="_fsm_transition_to"\s+value="{transition}"', page))


def test_pause_and_resume_from_the_list_are_logged(console, operator):
    first = put_in_state(make_task(), status="in_progress", phase="planning")
    second = put_in_state(make_task(), status="in_progress")
    response = run_action(console, "pause_tasks", first, second)
    for task in (first, second):
        task.refresh_from_db()
        assert task.status == "paused"
        event = task.events.filter(kind="transition", field="status").latest("id")
        assert (event.source, event.target) == ("in_progress", "paused")
        assert event.actor == f"user:{operator.username}"
    assert messages_of(response) == [
        f"Paused 2 task(s): {first.task_id}, {second.task_id}."
    ]
    response = run_action(console, "resume_tasks", first)
    first.refresh_from_db()
    assert first.status == "in_progress" and first.phase == "planning"
    # The earlier message is shown with it (nothing read it in between).
    assert messages_of(response)[-1] == f"Resumed 1 task(s): {first.task_id}."


def test_a_pending_task_is_not_paused_and_says_why(console):
    task = make_task()
    response = run_action(console, "pause_tasks", task)
    task.refresh_from_db()
    assert task.status == "pending"
    (message,) = messages_of(response)
    assert "a pending task cannot be paused: only a task in progress pauses" in message


def test_resume_refuses_what_is_not_paused(console):
    task = put_in_state(make_task(), status="blocked")
    response = run_action(console, "resume_tasks", task)
    assert messages_of(response) == [
        f"{task.task_id}: a blocked task cannot be resumed: only a paused one resumes."
    ]


def test_pause_waits_for_the_step_a_worker_is_in(console):
    task = put_in_state(make_task(), status="in_progress")
    task.acquire_lease("worker:x")
    response = run_action(console, "pause_tasks", task)
    task.refresh_from_db()
    assert task.status == "in_progress"
    assert ControlRequest.objects.get(task=task).action == "pause"
    assert messages_of(response) == [
        f"{task.task_id}: a worker is in a step; the pause will happen when that "
        "step ends."
    ]


def test_the_task_page_has_the_buttons_and_links_the_live_page(console):
    task = put_in_state(make_task(), status="in_progress")
    change = reverse("admin:tasks_task_change", args=[task.pk])
    page = console.get(change).content.decode()
    assert button("pause", page) and not button("resume", page)
    live = reverse("pages:task", args=[task.task_id])
    assert f'<a href="{live}" id="live-page">' in page
    post_transition(console, task, "pause")
    task.refresh_from_db()
    assert task.status == "paused"
    page = console.get(change).content.decode()
    assert button("resume", page) and not button("pause", page)
