"""Crafted ids, cursors, filters and bodies: a 4xx in the one error shape,
never a 500 (run on PostgreSQL too, which refuses NUL in text)."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from tests.core.api.conftest import assert_error_shape, role_client
from tests.core.api.resources import make_world

pytestmark = pytest.mark.django_db

# base64 of "p=2026-11-25": a position that is not an id.
FORGED_CURSOR = "cD0yMDI2LTExLTI1"
# base64 of "p=99999999999999999999999": an id no bigint holds.
HUGE_CURSOR = "cD05OTk5OTk5OTk5OTk5OTk5OTk5OTk5"


@pytest.fixture
def world():
    return make_world()


@pytest.fixture
def operator_api():
    return role_client("operator")


def _no_raise_client(client):
    client.raise_request_exception = False
    return client


@pytest.mark.parametrize("cursor", [FORGED_CURSOR, HUGE_CURSOR])
@pytest.mark.parametrize(
    "url",
    [
        "/api/tasks/",
        "/api/tasks/{task_id}/events/",
        "/api/escalations/",
        "/api/agent-runs/",
    ],
)
def test_a_forged_cursor_is_404_invalid_cursor(world, operator_api, url, cursor):
    url = url.format(task_id=world.task.task_id)
    response = operator_api.get(url, {"cursor": cursor})
    error = assert_error_shape(response, 404, "not_found")
    assert error["message"] == "Invalid cursor"


def test_a_real_cursor_still_pages(world, operator_api):
    first = operator_api.get("/api/tasks/", {"page_size": 1}).json()
    assert first["next"]
    assert operator_api.get(first["next"]).status_code == 200


@pytest.mark.parametrize(
    "url", ["/api/tasks/%00/", "/api/tasks/%00/events/", "/api/tasks/a%00b/reports/"]
)
def test_nul_in_an_api_path_is_400(operator_api, url):
    error = assert_error_shape(operator_api.get(url), 400, "invalid_characters")
    assert "NUL" in error["message"]


def test_nul_in_the_escalations_task_filter_is_400(world, operator_api):
    response = operator_api.get("/api/escalations/?task=%00")
    assert_error_shape(response, 400, "invalid_characters")


def test_nul_in_the_artifacts_name_filter_is_400(world, operator_api):
    url = f"/api/tasks/{world.task.task_id}/artifacts/?name=spec%00.md"
    assert_error_shape(operator_api.get(url), 400, "invalid_characters")


def test_nul_in_a_task_page_path_is_a_plain_400(operator):
    client = Client()
    client.force_login(operator)
    response = client.get("/tasks/%00/")
    assert response.status_code == 400
    assert response["Content-Type"].startswith("text/plain")
    assert b"NUL" in response.content


def test_nul_in_an_admin_filter_is_400(console):
    response = console.get("/admin/tasks/task/?status__exact=%00")
    assert response.status_code == 400


def test_a_body_nested_50000_deep_is_400(operator_api):
    body = "[" * 50_000 + "]" * 50_000
    response = operator_api.post("/api/tasks/", body, content_type="application/json")
    error = assert_error_shape(response, 400, "parse_error")
    assert "nested" in error["message"]


def test_brackets_inside_strings_do_not_count_as_depth(operator_api):
    body = json.dumps({"title": "[" * 100, "repository": "x"})
    response = operator_api.post("/api/tasks/", body, content_type="application/json")
    error = assert_error_shape(response, 400, "invalid")
    assert "repository" in error["fields"]


def test_a_body_over_the_size_limit_is_413(settings, operator_api):
    settings.CODEX_API_MAX_BODY_BYTES = 10_000
    body = json.dumps({"title": "x", "description": "y" * 20_000})
    response = operator_api.post("/api/tasks/", body, content_type="application/json")
    assert_error_shape(response, 413, "payload_too_large")


@pytest.mark.parametrize(
    "body",
    [
        '{"title": "a\\u0000b", "repository": "https://github.com/acme/web"}',
        '{"title": "a", "repository": "https://github.com/acme/web", '
        '"description": "\\ud800"}',
        '{"title\\u0000": "a"}',
    ],
    ids=["nul-value", "lone-surrogate", "nul-key"],
)
def test_text_postgresql_refuses_is_400_at_the_boundary(operator_api, body):
    response = operator_api.post("/api/tasks/", body, content_type="application/json")
    error = assert_error_shape(response, 400, "parse_error")
    assert "NUL" in error["message"]


def test_nul_in_an_answer_is_400(world, operator_api):
    response = operator_api.post(
        f"/api/escalations/{world.escalation.pk}/resolve/",
        '{"decision": "resume", "answers": ["a\\u0000"]}',
        content_type="application/json",
    )
    assert_error_shape(response, 400, "parse_error")


def test_nan_is_not_json(operator_api):
    response = operator_api.post(
        "/api/tasks/", '{"title": NaN}', content_type="application/json"
    )
    assert_error_shape(response, 400, "parse_error")


def test_a_500_under_the_api_is_in_the_error_shape(world, operator_api, monkeypatch):
    def explode(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr("codex.tasks.api.views.issue_state", explode)
    client = _no_raise_client(operator_api)
    response = client.get(f"/api/tasks/{world.task.task_id}/issue-state/")
    error = assert_error_shape(response, 500, "server_error")
    assert "boom" not in error["message"]
