"""The repositories API: operators register repositories, by URL."""

from __future__ import annotations

import pytest

from codex.repositories.models import Repository
from tests.core.api.conftest import assert_error_shape, role_client

pytestmark = pytest.mark.django_db


@pytest.fixture
def operator_client(db):
    return role_client("operator", "ops")


def test_operators_register_repositories(operator_client):
    response = operator_client.post(
        "/api/repositories/",
        {"url": "https://GitHub.com/acme/new.git", "default_branch": "trunk"},
        format="json",
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["url"] == "https://github.com/acme/new"
    assert body["full_name"] == "acme/new"
    assert response["Location"] == f"/api/repositories/{body['id']}/"
    detail = operator_client.get(f"/api/repositories/{body['id']}/").json()
    assert detail["default_branch"] == "trunk"
    again = operator_client.post(
        "/api/repositories/", {"url": "https://github.com/acme/new"}, format="json"
    )
    assert "url" in assert_error_shape(again, 400, "invalid")["fields"]
    bad = operator_client.post("/api/repositories/", {"url": "nope"}, format="json")
    assert "url" in assert_error_shape(bad, 400)["fields"]
    assert Repository.objects.count() == 1
    assert_error_shape(operator_client.get("/api/repositories/999999/"), 404)
