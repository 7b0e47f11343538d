"""The inbox and its answer form follow the API's roles: team members and
operators resolve escalations; integrators only create and read tasks."""

from __future__ import annotations

import pytest

from tests.factories import make_user
from tests.tasks.pages.test_inbox import INBOX, answer, escalate, resolve_url

pytestmark = pytest.mark.django_db


@pytest.fixture
def integrator_client(client):
    client.force_login(make_user("ivy", role="integrator"))
    return client


def test_an_integrator_cannot_answer_an_escalation(integrator_client):
    task, escalation = escalate()

    response = integrator_client.post(
        resolve_url(escalation), answer(escalation, answers=["yes", "ivy"])
    )

    assert response.status_code == 403
    assert "for operator and team accounts" in response.content.decode()
    escalation.refresh_from_db()
    assert escalation.is_open
    task.refresh_from_db()
    assert task.status == "escalated"


def test_an_integrator_sees_neither_the_inbox_nor_its_link(integrator_client):
    escalate()
    assert integrator_client.get(INBOX).status_code == 403
    dashboard = integrator_client.get("/dashboard/").content.decode()
    assert 'href="/inbox/"' not in dashboard
    assert 'href="/admin/"' not in dashboard


def test_a_team_member_sees_the_inbox_link_but_not_the_console(member_client):
    dashboard = member_client.get("/dashboard/").content.decode()
    assert 'href="/inbox/"' in dashboard
    assert 'href="/admin/"' not in dashboard


def test_a_person_without_a_group_counts_as_an_integrator(client):
    client.force_login(make_user("nobody"))
    assert client.get(INBOX).status_code == 403
