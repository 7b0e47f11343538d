"""The task page's gate and steering forms (docs/gates.md)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from tests.factories import (
    make_task,
    make_user,
    waiting_for_plan_approval,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def requester():
    return make_user("rita", role="team")


@pytest.fixture
def waiting(requester):
    return waiting_for_plan_approval(
        make_task(requested_by=requester),
        reason="the spec, plan and tasks wait for a person's approval",
    )


def decide(client, task, decision: str, **fields):
    return client.post(
        reverse("pages:gate_decision", args=[task.task_id]),
        {"decision": decision, "subject": task.open_gate.subject, **fields},
        follow=True,
    )


def test_the_page_shows_the_gate_with_its_reason_and_form(member_client, waiting):
    page = member_client.get(reverse("pages:task", args=[waiting.task_id])).content
    text = page.decode()
    assert 'id="gate"' in text and "wait for a person&#x27;s approval" in text
    assert waiting.open_gate.subject in text
    assert 'value="approve"' in text and 'value="changes"' in text


def test_a_team_member_approves(member_client, waiting):
    response = decide(member_client, waiting, "approve")
    assert response.status_code == 200
    waiting.refresh_from_db()
    assert (waiting.status, waiting.phase) == ("in_progress", "implementation")
    assert waiting.gates.get().decided_by == "user:bob"


def test_the_requester_is_told_why_not(client, requester, waiting):
    client.force_login(requester)
    response = decide(client, waiting, "approve")
    assert "requester cannot approve" in response.content.decode()
    waiting.refresh_from_db()
    assert waiting.status == "escalated"


def test_an_integrator_sees_no_form_and_may_not_post(client, waiting):
    integrator = make_user("ivan", role="integrator")
    client.force_login(integrator)
    response = client.post(
        reverse("pages:gate_decision", args=[waiting.task_id]),
        {"decision": "approve", "subject": waiting.open_gate.subject},
    )
    assert response.status_code == 403
    waiting.refresh_from_db()
    assert waiting.status == "escalated"


def test_changes_without_text_are_refused(member_client, waiting):
    response = decide(member_client, waiting, "changes", feedback="")
    assert "say what should change" in response.content.decode()


def test_a_message_to_the_agents_is_stored_and_shown_in_the_timeline(member_client):
    task = make_task()
    response = member_client.post(
        reverse("pages:steer", args=[task.task_id]),
        {"message": "Keep the public API unchanged."},
        follow=True,
    )
    assert response.status_code == 200
    message = task.steering_messages.get()
    assert (message.author, message.source) == ("user:bob", "page")
    assert "Keep the public API unchanged." in response.content.decode()


def test_a_nul_in_a_message_is_dropped_not_a_500(member_client):
    task = make_task()
    response = member_client.post(
        reverse("pages:steer", args=[task.task_id]), {"message": "a\x00b"}
    )
    assert response.status_code == 302
    assert task.steering_messages.get().body == "ab"
