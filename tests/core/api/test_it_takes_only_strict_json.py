"""The API takes writes as documented: JSON only, known fields only, text as
text; `Bearer <key>` is the same as `Token <key>`."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from codex.tasks.models import Task
from tests.core.api.conftest import assert_error_shape, role_client
from tests.core.api.resources import make_escalation
from tests.factories import make_token, make_user

pytestmark = pytest.mark.django_db

URL = "/api/tasks/"
VALID = {
    "repository": "https://github.com/acme/shop",
    "title": "Add a wish list",
    "priority": "high",
}


@pytest.fixture
def integrator():
    return role_client("integrator")


def test_a_form_encoded_body_is_415(integrator):
    response = integrator.post(URL, VALID, format="multipart")
    assert_error_shape(response, 415, "unsupported_media_type")
    response = integrator.post(
        URL,
        "repository=https%3A%2F%2Fgithub.com%2Facme%2Fshop&title=x",
        content_type="application/x-www-form-urlencoded",
    )
    assert_error_shape(response, 415, "unsupported_media_type")
    assert not Task.objects.exists()


def test_an_unknown_field_is_400_by_name(integrator):
    response = integrator.post(URL, {**VALID, "priorty": "low"}, format="json")
    error = assert_error_shape(response, 400, "invalid")
    assert error["fields"] == {"priorty": ["Unknown field."]}
    assert not Task.objects.exists()


def test_a_read_only_field_is_unknown_on_write(integrator):
    response = integrator.post(URL, {**VALID, "status": "completed"}, format="json")
    assert "status" in assert_error_shape(response, 400)["fields"]


@pytest.mark.parametrize(
    ("field", "value"),
    [("title", 123), ("title", 1.5), ("title", True), ("description", ["x"])],
)
def test_a_number_is_not_coerced_into_text(integrator, field, value):
    response = integrator.post(URL, {**VALID, field: value}, format="json")
    error = assert_error_shape(response, 400, "invalid")
    assert error["fields"][field] == ["Must be a string."]
    assert not Task.objects.exists()


def test_answers_must_be_text(db):
    escalation = make_escalation(questions=["Which providers?"])
    response = role_client("team").post(
        f"/api/escalations/{escalation.pk}/resolve/",
        {"decision": "resume", "answers": [42]},
        format="json",
    )
    error = assert_error_shape(response, 400, "invalid")
    assert error["fields"]["answers"] == ["Every item must be a string."]


def test_bearer_is_an_alias_of_token():
    _, key = make_token(make_user())
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    assert client.get(URL).status_code == 200
    client.credentials(HTTP_AUTHORIZATION="Bearer not-a-key")
    assert_error_shape(client.get(URL), 401, "authentication_failed")


def test_no_credentials_401_says_which_header(db):
    error = assert_error_shape(APIClient().get(URL), 401, "not_authenticated")
    assert "Authorization: Token <key>" in error["message"]
