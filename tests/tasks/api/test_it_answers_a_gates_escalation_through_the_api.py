"""A task waiting at a gate is `escalated` in the API, never another status,
and its escalation (reason plan_approval, merge_approval or spend_cap) is
answered through POST /api/escalations/{id}/resolve/ like any escalation,
with the gate's own decisions and rules (docs/gates.md)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from codex.fleet.models import AgentRun
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


def resolve(client, escalation, **body):
    return client.post(
        f"/api/escalations/{escalation.pk}/resolve/", body, format="json"
    )


def test_the_task_is_escalated_and_its_gate_escalation_is_listed(api_client, waiting):
    task = api_client.get(f"/api/tasks/{waiting.task_id}/").json()
    assert task["status"] == "escalated"
    assert task["waiting_for"]["kind"] == "plan"
    listed = api_client.get("/api/escalations/").json()["results"]
    assert [(e["task"], e["reason"]) for e in listed] == [
        (waiting.task_id, "plan_approval")
    ]


def test_a_team_member_approves_through_the_escalation(api_client, waiting):
    escalation = waiting.escalations.open().get()
    refused = resolve(api_client, escalation, decision="approve")
    error = assert_error_shape(refused, 409, "gate_refused")
    assert waiting.open_gate.subject in error["message"]

    response = resolve(
        api_client, escalation, decision="approve", subject=waiting.open_gate.subject
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["decision"], body["is_open"], body["resolved_by_label"]) == (
        "approve",
        False,
        "api:member",
    )
    waiting.refresh_from_db()
    assert (waiting.status, waiting.phase) == ("in_progress", "implementation")


def test_resume_is_not_an_answer_to_a_plan_approval(api_client, waiting):
    escalation = waiting.escalations.open().get()
    response = resolve(api_client, escalation, decision="resume")
    assert response.status_code == 400
    assert "approve, request_changes, fail, cancel" in str(response.json())


def test_the_requester_alone_gets_403(requester, waiting):
    escalation = waiting.escalations.open().get()
    response = resolve(
        token_client(requester),
        escalation,
        decision="approve",
        subject=waiting.open_gate.subject,
    )
    assert "requester" in assert_error_shape(response, 403)["message"]
    waiting.refresh_from_db()
    assert waiting.status == Status.ESCALATED


def test_a_spend_cap_resumes_only_once_it_is_raised(api_client):
    repository = make_repository(monthly_cap_usd=Decimal("1"))
    AgentRun.objects.begin(
        by="worker:test",
        session_id="spent",
        task=make_task(repository),
        cost_usd=Decimal("1"),
    )
    task = put_in_state(make_task(repository), Status.IN_PROGRESS, "implementation")
    task.perform(
        "await_approval",
        by="system:pipeline",
        reason="capped",
        kind="spend",
        mode="cap",
    )
    escalation = task.escalations.open().get()
    assert escalation.reason == "spend_cap"

    refused = resolve(api_client, escalation, decision="resume")
    assert "still at a cap" in assert_error_shape(refused, 409)["message"]

    repository.monthly_cap_usd = Decimal("50")
    repository.save()
    assert resolve(api_client, escalation, decision="resume").status_code == 200
    task.refresh_from_db()
    assert task.status == "in_progress"
    assert task.gates.get().decision == "under_cap"
