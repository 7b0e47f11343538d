"""The inbox lists everything waiting for a person (docs/domain/tasks.md#inbox):
open escalations, gates included (a gate waits as `escalated` with an
escalation of its own kind, answered here with the gate's own decisions and
rules, docs/gates.md), and the tasks blocked until a person unblocks them,
each with its reason and the one action that helps."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from tests.factories import (
    make_task,
    make_user,
    put_in_state,
    waiting_for_plan_approval,
)

pytestmark = pytest.mark.django_db

INBOX = "/inbox/"


@pytest.fixture
def requester():
    return make_user("rita", role="team")


@pytest.fixture
def waiting(requester):
    return waiting_for_plan_approval(
        make_task(title="Plan waiting", requested_by=requester),
        reason="the spec, plan and tasks wait for a person's approval",
    )


def answer(client, escalation, decision, note="", subject=None):
    prefix = f"esc{escalation.pk}"
    gate = escalation.gate
    return client.post(
        reverse("pages:resolve", args=[escalation.pk]),
        {
            f"{prefix}-decision": decision,
            f"{prefix}-resolution": note,
            f"{prefix}-subject": gate.subject if subject is None else subject,
        },
        follow=True,
    )


def test_a_plan_gate_is_listed_with_what_helps_and_the_gates_decisions(
    member_client, waiting
):
    escalation = waiting.escalations.open().get()
    text = member_client.get(INBOX).content.decode()
    assert f'id="escalation-{escalation.pk}"' in text
    assert "Plan approval" in text and "Plan waiting" in text
    assert "approve the plan or ask for changes" in text  # the one action
    assert waiting.open_gate.subject in text
    for decision in ("approve", "request_changes", "fail", "cancel"):
        assert f'value="{decision}"' in text
    assert 'value="resume"' not in text
    assert "1 open escalation" in text


def test_a_team_member_approves_the_plan_in_the_inbox(member_client, waiting):
    escalation = waiting.escalations.open().get()
    response = answer(member_client, escalation, "approve")
    assert response.status_code == 200
    waiting.refresh_from_db()
    assert (waiting.status, waiting.phase) == ("in_progress", "implementation")
    gate = waiting.gates.get()
    assert (gate.decision, gate.decided_by) == ("approved", "user:bob")
    escalation.refresh_from_db()
    assert (escalation.decision, escalation.resolved_by_label) == (
        "approve",
        "user:bob",
    )
    assert escalation.consumed_at is not None


def test_asking_for_changes_sends_the_plan_back_with_the_text(member_client, waiting):
    escalation = waiting.escalations.open().get()
    assert "Say what should change" in (
        answer(member_client, escalation, "request_changes").content.decode()
    )
    answer(member_client, escalation, "request_changes", note="Split task 1.")
    waiting.refresh_from_db()
    assert (waiting.status, waiting.plan_cycles) == ("in_progress", 1)
    assert waiting.feedback_history["plan"][0]["feedback"] == {
        "message": "Split task 1."
    }


def test_the_gates_rules_hold_in_the_inbox_too(client, requester, waiting):
    escalation = waiting.escalations.open().get()
    client.force_login(requester)
    response = answer(client, escalation, "approve")
    assert "requester cannot approve" in response.content.decode()
    stale = answer(client, escalation, "approve", subject="0123456789abcdef")
    assert "Not accepted" in stale.content.decode()
    waiting.refresh_from_db()
    assert waiting.status == "escalated"
    assert waiting.escalations.open().get() == escalation


def test_failing_a_gate_closes_it(member_client, waiting):
    escalation = waiting.escalations.open().get()
    answer(member_client, escalation, "fail", note="not worth it")
    waiting.refresh_from_db()
    assert waiting.status == "failed"
    assert waiting.gates.get().decision == "withdrawn"


def test_blocked_tasks_that_wait_for_a_person_are_listed_with_retry(client):
    operator = make_user("olivia", is_staff=True)
    client.force_login(operator)
    stuck = put_in_state(
        make_task(title="Needs a key"),
        "blocked",
        "intake",
        blocked_reason="no agent backend configured: set ANTHROPIC_API_KEY",
    )
    put_in_state(
        make_task(title="Retries by itself"),
        "blocked",
        "intake",
        blocked_reason="rate limited",
        blocked_until=timezone.now() + timedelta(minutes=5),
    )
    text = client.get(INBOX).content.decode()
    assert f'id="blocked-{stuck.task_id}"' in text
    assert "set ANTHROPIC_API_KEY" in text
    assert "nothing retries it on its own" in text
    assert reverse("pages:task_action", args=[stuck.task_id, "retry"]) in text
    assert "Retries by itself" not in text
    assert "1 task blocked or paused until a person acts" in text

    client.post(reverse("pages:task_action", args=[stuck.task_id, "retry"]))
    stuck.refresh_from_db()
    assert stuck.status == "in_progress"


def test_a_team_member_sees_the_blocked_task_and_who_retries_it(member_client):
    put_in_state(make_task(title="Needs a key"), "blocked", "intake")
    text = member_client.get(INBOX).content.decode()
    assert "Needs a key" in text and "An operator retries it" in text


def test_a_paused_task_is_listed_with_resume(client):
    client.force_login(make_user("olivia", is_staff=True))
    paused = put_in_state(make_task(title="On hold"), "paused", "implementation")
    text = client.get(INBOX).content.decode()
    assert f'id="blocked-{paused.task_id}"' in text
    assert "Resume it when it should go on" in text
    assert reverse("pages:task_action", args=[paused.task_id, "resume"]) in text
