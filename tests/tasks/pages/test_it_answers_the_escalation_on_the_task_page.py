"""The open escalation's answer form is on the task page for the people who may
answer it, and answering there comes back to the task page."""

from __future__ import annotations

import pytest
from django.urls import reverse

from tests.factories import make_task, make_user, put_in_state

pytestmark = pytest.mark.django_db


def escalated_task():
    task = put_in_state(make_task(), status="in_progress", phase="verification")
    task.perform(
        "escalate",
        by="agent:qa",
        reason="verification cycles exhausted",
        questions=["Ship it?"],
        code="verification_max_cycles",
    )
    return task


def test_a_member_answers_on_the_task_page_and_comes_back(member_client):
    task = escalated_task()
    escalation = task.escalations.get()
    here = reverse("pages:task", args=[task.task_id])

    html = member_client.get(here).content.decode()
    assert 'id="answer"' in html and "Ship it?" in html
    assert "Escalated" in html  # the phase says so, not "In progress"

    prefix = f"esc{escalation.pk}"
    response = member_client.post(
        reverse("pages:resolve", args=[escalation.pk]),
        {
            f"{prefix}-answer_0": "Yes",
            f"{prefix}-resolution": "",
            f"{prefix}-decision": "resume",
            "next": here,
        },
    )

    assert response.status_code == 302 and response["Location"] == here
    task.refresh_from_db()
    assert task.status == "in_progress"


def test_an_outside_next_is_ignored(member_client):
    task = escalated_task()
    escalation = task.escalations.get()
    prefix = f"esc{escalation.pk}"

    response = member_client.post(
        reverse("pages:resolve", args=[escalation.pk]),
        {
            f"{prefix}-answer_0": "Yes",
            f"{prefix}-decision": "resume",
            "next": "https://evil.example/",
        },
    )

    assert response["Location"] == reverse("pages:inbox")


def test_an_integrator_sees_no_answer_form(client):
    client.force_login(make_user("ian", role="integrator"))
    task = escalated_task()

    html = client.get(reverse("pages:task", args=[task.task_id])).content.decode()

    assert 'id="answer"' not in html
