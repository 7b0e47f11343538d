"""Happy paths, 400, 404 and 409 of a task's events, artifacts and reports, retry
and escalations."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from codex.tasks.models import Artifact, ReviewReport, Task, VerificationReport
from tests.core.api.conftest import assert_error_shape, results, role_client
from tests.core.api.resources import make_escalation
from tests.factories import make_task, put_in_state

pytestmark = pytest.mark.django_db


@pytest.fixture
def operator_client(db):
    return role_client("operator", "ops")


@pytest.fixture
def team_client(db):
    return role_client("team", "carol")


# -- task events, artifacts, reports ---------------------------------------------------


def test_events_oldest_first_and_filtered(api_client):
    task = make_task()
    put_in_state(task, status="in_progress")
    task.perform("pause", by="user:x", reason="lunch")
    events = results(api_client.get(f"/api/tasks/{task.task_id}/events/"))
    assert [e["kind"] for e in events] == ["created", "transition"]
    assert events[1]["reason"] == "lunch"
    only = results(
        api_client.get(f"/api/tasks/{task.task_id}/events/", {"kind": "created"})
    )
    assert [e["kind"] for e in only] == ["created"]
    error = assert_error_shape(
        api_client.get(f"/api/tasks/{task.task_id}/events/", {"kind": "nope"}), 400
    )
    assert "kind" in error["fields"]


def test_artifacts_with_content(api_client):
    task = make_task()
    Artifact.store_all(task, {"spec.md": "# Spec v1"})
    Artifact.store_all(task, {"spec.md": "# Spec v2"})
    Artifact.store_all(task, {"plan.md": "# Plan"})
    items = results(api_client.get(f"/api/tasks/{task.task_id}/artifacts/"))
    assert {i["content"] for i in items} == {"# Spec v1", "# Spec v2", "# Plan"}
    spec = results(
        api_client.get(f"/api/tasks/{task.task_id}/artifacts/", {"name": "spec.md"})
    )
    assert spec[0]["content"] == "# Spec v2"
    assert spec[0]["path"] == f"agent-spec/{task.task_id}/spec.md"


def test_reports_by_cycle(api_client):
    task = make_task()
    VerificationReport.objects.create(
        task=task, cycle=1, recommendation="request_changes", tests_failed=2
    )
    ReviewReport.objects.create(
        task=task,
        cycle=1,
        assessment="approve",
        comments=[{"severity": "blocking"}, {"severity": "suggestion"}],
    )
    body = api_client.get(f"/api/tasks/{task.task_id}/reports/").json()
    assert body["verification"][0]["tests_failed"] == 2
    assert body["review"][0]["blocking_count"] == 1


@pytest.mark.parametrize("suffix", ["events", "artifacts", "reports"])
def test_task_sub_resources_of_an_unknown_task_are_404(api_client, suffix):
    response = api_client.get(f"/api/tasks/FEAT-20260101-zzzzzz/{suffix}/")
    assert_error_shape(response, 404, "not_found")


# -- retry -----------------------------------------------------------------------------


def retry(client, task, **body):
    return client.post(f"/api/tasks/{task.task_id}/retry/", body, format="json")


def test_retry_a_blocked_task_unblocks_it_now(operator_client):
    task = put_in_state(
        make_task(),
        status="blocked",
        blocked_until=timezone.now() + timedelta(hours=1),
        blocked_reason="rate limited",
    )
    response = retry(operator_client, task)
    assert response.status_code == 200, response.content
    assert response.json()["status"] == "in_progress"
    task.refresh_from_db()
    assert (task.status, task.blocked_until, task.blocked_reason) == (
        "in_progress",
        None,
        "",
    )


def test_retry_a_failed_task_creates_a_linked_new_task(operator_client):
    old = put_in_state(make_task(title="Wish list", issue_number=7), status="failed")
    response = retry(operator_client, old, reason="flaky CI")
    assert response.status_code == 201, response.content
    new = Task.objects.get(task_id=response.json()["task_id"])
    assert response["Location"] == f"/api/tasks/{new.task_id}/"
    assert response.json()["retry_of"] == old.task_id
    assert (new.status, new.title, new.issue_number) == ("pending", "Wish list", 7)
    assert new.idempotency_key == f"retry:{old.task_id}"
    old_event = old.events.get(kind="control")
    assert old_event.data == {"action": "retry", "retried_as": new.task_id}
    assert old_event.reason == "flaky CI"
    new_event = new.events.get(kind="control")
    assert new_event.data == {"action": "retry", "retry_of": old.task_id}
    old.refresh_from_db()
    assert old.status == "failed"  # terminal states stay terminal
    # Asking again returns the same new task: one retry per failed task.
    again = retry(operator_client, old)
    assert again.status_code == 200
    assert again.json()["task_id"] == new.task_id
    assert Task.objects.count() == 2


@pytest.mark.parametrize(
    ("status", "allowed"),
    [
        ("pending", ["cancel"]),
        ("in_progress", ["pause", "cancel"]),
        ("completed", []),
        ("cancelled", []),
    ],
)
def test_retry_elsewhere_is_409_with_the_allowed_actions(
    operator_client, status, allowed
):
    task = put_in_state(make_task(), status=status)
    error = assert_error_shape(
        retry(operator_client, task), 409, "transition_not_allowed"
    )
    assert sorted(error["allowed_actions"]) == sorted(allowed)
    assert Task.objects.count() == 1


def test_retry_of_a_blocked_task_a_worker_holds_is_409(operator_client):
    task = put_in_state(make_task(), status="blocked")
    task.acquire_lease("worker:x")
    error = assert_error_shape(retry(operator_client, task), 409, "lease_held")
    assert error["lease_holder"] == "worker:x"


# -- escalations -----------------------------------------------------------------------


def test_escalation_list_shows_open_ones_by_default(team_client):
    open_one = make_escalation()
    closed = make_escalation()
    closed.task.escalations.close_open(by="test", reason="done")
    ids = [e["id"] for e in results(team_client.get("/api/escalations/"))]
    assert ids == [open_one.pk]
    every = results(team_client.get("/api/escalations/", {"state": "all"}))
    assert {e["id"] for e in every} == {open_one.pk, closed.pk}
    mine = results(
        team_client.get("/api/escalations/", {"task": open_one.task.task_id})
    )
    assert [e["id"] for e in mine] == [open_one.pk]
    assert_error_shape(team_client.get("/api/escalations/", {"state": "x"}), 400)


def test_escalation_detail_and_404(team_client):
    escalation = make_escalation()
    body = team_client.get(f"/api/escalations/{escalation.pk}/").json()
    assert body["questions"] == ["Which providers?"]
    assert body["is_open"] is True
    assert body["task"] == escalation.task.task_id
    assert_error_shape(team_client.get("/api/escalations/999999/"), 404, "not_found")


def resolve(client, escalation, **body):
    return client.post(
        f"/api/escalations/{escalation.pk}/resolve/", body, format="json"
    )


def test_resolve_with_answers_resumes_the_task(team_client):
    escalation = make_escalation()
    response = resolve(team_client, escalation, decision="resume", answers=["GitHub"])
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["decision"] == "resume"
    assert body["answers"] == ["GitHub"]
    assert body["resolved_by_label"] == "api:carol"
    assert body["task_status"] == "in_progress"


@pytest.mark.parametrize("decision", ["fail", "cancel"])
def test_resolve_fail_or_cancel(team_client, decision):
    escalation = make_escalation()
    response = resolve(team_client, escalation, decision=decision)
    assert response.status_code == 200, response.content
    escalation.task.refresh_from_db()
    assert escalation.task.status == {"fail": "failed", "cancel": "cancelled"}[decision]


def test_resolving_twice_is_409_already_resolved(team_client):
    escalation = make_escalation()
    assert resolve(team_client, escalation, decision="cancel").status_code == 200
    error = assert_error_shape(
        resolve(team_client, escalation, decision="fail"), 409, "already_resolved"
    )
    assert error["decision"] == "cancel"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "decision"),
        ({"decision": "maybe"}, "decision"),
        ({"decision": "resume"}, "answers"),  # a question without an answer
        ({"decision": "resume", "answers": ["a", "b"]}, "answers"),
        ({"decision": "cancel", "resolution": "x" * 5001}, "resolution"),
    ],
)
def test_resolve_400(team_client, body, field):
    escalation = make_escalation()
    error = assert_error_shape(resolve(team_client, escalation, **body), 400, "invalid")
    assert field in error["fields"]
    escalation.refresh_from_db()
    assert escalation.is_open


def test_resolve_unknown_escalation_is_404(team_client):
    assert_error_shape(
        team_client.post("/api/escalations/424242/resolve/", {}, format="json"), 404
    )
