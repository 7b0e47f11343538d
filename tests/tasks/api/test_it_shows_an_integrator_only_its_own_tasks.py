"""One policy for roles (codex.accounts.permissions): an integrator sees the
tasks it requested and no escalation content, in the API and on the pages."""

from __future__ import annotations

import pytest
import yaml
from django.test import Client

from codex.tasks.models import Task
from tests.core.api.conftest import assert_error_shape, token_client
from tests.core.api.resources import make_escalation
from tests.factories import make_task, make_user

pytestmark = pytest.mark.django_db

QUESTION = "Which login providers does the secret project need?"
ANSWER = "Only the internal SSO of project Nightjar."
SUB_RESOURCES = ("", "envelope/", "issue-state/", "events/", "artifacts/", "reports/")


def request_task(client, title: str) -> Task:
    response = client.post(
        "/api/tasks/",
        {"repository": "https://github.com/acme/web", "title": title},
        format="json",
    )
    assert response.status_code == 201, response.content
    return Task.objects.get(task_id=response.json()["task_id"])


@pytest.fixture
def alice():
    return make_user("alice-integrator", role="integrator")


@pytest.fixture
def bob():
    return make_user("bob-integrator", role="integrator")


def test_an_integrator_lists_only_the_tasks_it_requested(alice, bob):
    mine = request_task(token_client(alice), "Mine")
    theirs = request_task(token_client(bob), "Theirs")
    make_task(title="From a GitHub issue")
    listed = token_client(alice).get("/api/tasks/").json()["results"]
    assert [item["task_id"] for item in listed] == [mine.task_id]
    team = token_client(make_user(role="team")).get("/api/tasks/").json()
    assert {item["task_id"] for item in team["results"]} >= {
        mine.task_id,
        theirs.task_id,
    }


@pytest.mark.parametrize("suffix", SUB_RESOURCES)
def test_another_integrators_task_is_404_everywhere(alice, bob, suffix):
    theirs = request_task(token_client(bob), "Theirs")
    response = token_client(alice).get(f"/api/tasks/{theirs.task_id}/{suffix}")
    assert_error_shape(response, 404, "not_found")
    assert (
        token_client(bob).get(f"/api/tasks/{theirs.task_id}/{suffix}").status_code
        == 200
    )


def escalated_and_answered(owner) -> Task:
    task = request_task(token_client(owner), "Secret login")
    escalation = make_escalation(task, questions=[QUESTION])
    escalation.detail = QUESTION
    escalation.save(update_fields=["detail"])
    task.refresh_from_db()
    # What an agent's escalation writes to the log: the question itself.
    task.record(
        "escalation", by="agent:pm", reason=QUESTION, data={"questions": [QUESTION]}
    )
    task.save()
    response = token_client(make_user(role="team")).post(
        f"/api/escalations/{escalation.pk}/resolve/",
        {"decision": "resume", "answers": [ANSWER], "resolution": ANSWER},
        format="json",
    )
    assert response.status_code == 200, response.content
    return task


def test_an_integrator_reads_no_escalation_content_of_its_own_task(alice):
    task = escalated_and_answered(alice)
    client = token_client(alice)
    base = f"/api/tasks/{task.task_id}/"
    envelope = yaml.safe_load(client.get(base + "envelope/").content)
    assert len(envelope["escalations"]) == 1
    assert set(envelope["escalations"][0]) == {"timestamp", "phase", "resolved_at"}
    for suffix in ("envelope/", "issue-state/", "events/"):
        body = client.get(base + suffix).content.decode()
        assert QUESTION not in body, suffix
        assert ANSWER not in body, suffix
    assert_error_shape(client.get("/api/escalations/"), 403, "permission_denied")
    # The team reads it all.
    team = token_client(make_user(role="team"))
    assert QUESTION in team.get(base + "envelope/").content.decode()
    team_events = team.get(base + "events/").content.decode()
    assert QUESTION in team_events
    assert ANSWER in team_events


def test_on_the_pages_too(alice, bob):
    task = escalated_and_answered(alice)
    theirs = request_task(token_client(bob), "Theirs")
    browser = Client()
    browser.force_login(alice)
    assert browser.get(f"/tasks/{theirs.task_id}/").status_code == 404
    assert browser.get(f"/tasks/{theirs.task_id}/fragment/").status_code == 404
    page = browser.get(f"/tasks/{task.task_id}/")
    assert page.status_code == 200
    assert QUESTION.encode() not in page.content
    assert ANSWER.encode() not in page.content
    fragment = browser.get(f"/tasks/{task.task_id}/fragment/", {"full": "1"})
    assert QUESTION not in fragment.content.decode()
    dashboard = browser.get("/dashboard/").content.decode()
    assert theirs.title not in dashboard


def test_a_team_member_creates_tasks_in_the_api_and_on_the_form():
    member = make_user(role="team")
    request_task(token_client(member), "Through the API")
    browser = Client()
    browser.force_login(member)
    assert browser.get("/tasks/new/").status_code == 200
    created = Task.objects.get(title="Through the API")
    assert created.requested_by == member
