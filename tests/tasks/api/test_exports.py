"""GET /api/tasks/{task_id}/envelope/ serves spec 002's task-envelope.yml and
/issue-state/ spec 003's issue-state.json."""

from __future__ import annotations

import pytest
import yaml

from tests.factories import make_task

pytestmark = pytest.mark.django_db


def test_the_envelope_is_served_as_yaml(api_client):
    task = make_task(title="Add user authentication")
    response = api_client.get(f"/api/tasks/{task.task_id}/envelope/")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/yaml")
    assert 'filename="task-envelope.yml"' in response["Content-Disposition"]
    envelope = yaml.safe_load(response.content)
    assert envelope["task_id"] == task.task_id
    assert envelope["request"]["title"] == "Add user authentication"
    assert envelope["version"] == task.version


def test_the_issue_state_is_served_as_json(api_client):
    task = make_task(issue_number=42)
    response = api_client.get(f"/api/tasks/{task.task_id}/issue-state/")
    assert response.status_code == 200
    body = response.json()
    assert body["version"] == "1.0"
    assert body["issue"]["number"] == 42


@pytest.mark.parametrize("path", ["envelope", "issue-state"])
def test_exports_of_an_unknown_task_are_404(api_client, path):
    response = api_client.get(f"/api/tasks/FEAT-20260101-zzzzzz/{path}/")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


@pytest.mark.parametrize("path", ["envelope", "issue-state"])
def test_exports_need_authentication(client, path):
    task = make_task()
    assert client.get(f"/api/tasks/{task.task_id}/{path}/").status_code == 401
