"""POST /api/tasks/: a feature request becomes a pending task."""

from __future__ import annotations

import re

import pytest

from codex.events.models import Event
from codex.repositories.models import Repository
from codex.tasks.models import Task
from tests.core.api.conftest import assert_error_shape, token_client
from tests.factories import make_repository, make_user

pytestmark = pytest.mark.django_db

URL = "/api/tasks/"
TASK_ID = re.compile(r"^FEAT-\d{8}-[a-z0-9]{6}$")


def body(**overrides) -> dict:
    data = {
        "repository": "https://github.com/acme/shop",
        "title": "Add a wish list",
        "description": "As a shopper I want to save items for later.",
        "priority": "high",
        "acceptance_criteria": "- Items can be saved\n- Items can be removed",
    }
    data.update(overrides)
    return data


def post(client, data, **headers):
    return client.post(URL, data, format="json", headers=headers)


def test_create_returns_a_pending_task(api_client, api_user):
    response = post(api_client, body())
    assert response.status_code == 201, response.content
    data = response.json()
    assert TASK_ID.match(data["task_id"])
    assert data["status"] == "pending"
    assert data["phase"] == "intake"
    assert data["created_by"] == "api"
    assert data["repository"] == "https://github.com/acme/shop"
    assert data["request"] == {
        "title": "Add a wish list",
        "description": "As a shopper I want to save items for later.",
        "priority": "high",
        "acceptance_criteria": "- Items can be saved\n- Items can be removed",
    }
    assert "Idempotent-Replayed" not in response
    task = Task.objects.get(task_id=data["task_id"])
    assert task.created_by == "api"
    events = list(task.events.all())
    assert [event.kind for event in events] == ["created"]
    assert events[0].actor == f"api:{api_user.username}"


def test_priority_defaults_to_medium(api_client):
    data = body()
    del data["priority"], data["description"], data["acceptance_criteria"]
    response = post(api_client, data)
    assert response.status_code == 201, response.content
    assert response.json()["request"]["priority"] == "medium"


def test_unknown_repository_is_registered_on_first_use(api_client):
    url = "https://github.com/acme/brand-new"
    assert not Repository.objects.filter(url=url).exists()
    response = post(api_client, body(repository=url + ".git/"))
    assert response.status_code == 201, response.content
    repository = Repository.objects.get(url=url)
    assert repository.registered_on_first_use is True
    assert response.json()["repository"] == url


def test_known_repository_is_reused(api_client):
    repository = make_repository("https://github.com/acme/known")
    response = post(api_client, body(repository="https://GitHub.com/acme/known/"))
    assert response.status_code == 201, response.content
    assert Repository.objects.filter(url__icontains="acme/known").count() == 1
    assert Task.objects.get().repository == repository
    repository.refresh_from_db()
    assert repository.registered_on_first_use is False


def test_registered_repositories_only_refuses_unknown(api_client, settings):
    settings.CODEX_INTAKE_REGISTERED_REPOSITORIES_ONLY = True
    response = post(api_client, body(repository="https://github.com/acme/unknown"))
    error = assert_error_shape(response, 400, "invalid")
    assert "not registered" in error["fields"]["repository"][0]
    assert not Repository.objects.exists()
    assert not Task.objects.exists()


def test_registered_repositories_only_accepts_registered(api_client, settings):
    settings.CODEX_INTAKE_REGISTERED_REPOSITORIES_ONLY = True
    make_repository("https://github.com/acme/shop")
    assert post(api_client, body()).status_code == 201


def test_repository_that_does_not_accept_tasks_is_refused(api_client):
    make_repository("https://github.com/acme/shop", accepts_tasks=False)
    error = assert_error_shape(post(api_client, body()), 400, "invalid")
    assert "does not accept" in error["fields"]["repository"][0]
    assert not Task.objects.exists()


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"title": None}, "title"),
        ({"title": ""}, "title"),
        ({"title": "x" * 201}, "title"),
        ({"title": "line\nbreak"}, "title"),
        ({"priority": "urgent"}, "priority"),
        ({"repository": None}, "repository"),
        ({"repository": "not a url"}, "repository"),
        ({"repository": "ftp://x/y/z"}, "repository"),
        ({"repository": "https://github.com/only-owner"}, "repository"),
        ({"repository": "https://github.com/a/b/c"}, "repository"),
        ({"repository": "https://user:pw@github.com/a/b"}, "repository"),
    ],
)
def test_invalid_fields_are_400_with_a_field_message(api_client, overrides, field):
    data = body(**overrides)
    for name, value in overrides.items():
        if value is None:
            del data[name]
    error = assert_error_shape(post(api_client, data), 400, "invalid")
    assert list(error["fields"]) == [field]
    messages = error["fields"][field]
    assert isinstance(messages, list) and messages
    assert all(isinstance(message, str) and message for message in messages)
    assert not Task.objects.exists()


def test_title_of_200_characters_is_accepted(api_client):
    response = post(api_client, body(title="x" * 200))
    assert response.status_code == 201, response.content


def test_malformed_json_is_400(api_client):
    response = api_client.post(
        URL, '{"title": "unterminated', content_type="application/json"
    )
    error = assert_error_shape(response, 400)
    assert error["code"] == "parse_error"
    assert not Task.objects.exists()


def test_json_that_is_not_an_object_is_400(api_client):
    response = api_client.post(URL, "[1, 2]", content_type="application/json")
    assert_error_shape(response, 400, "invalid")
    assert not Task.objects.exists()


# -- Idempotency-Key -------------------------------------------------------------


def test_same_key_and_body_replays_the_first_task(api_client):
    first = post(api_client, body(), **{"Idempotency-Key": "abc-123"})
    assert first.status_code == 201, first.content
    second = post(api_client, body(), **{"Idempotency-Key": "abc-123"})
    assert second.status_code == 200, second.content
    assert second["Idempotent-Replayed"] == "true"
    assert second.json()["task_id"] == first.json()["task_id"]
    assert Task.objects.count() == 1
    assert Event.objects.filter(kind="created").count() == 1


def test_same_key_with_a_different_body_is_422(api_client):
    first = post(api_client, body(), **{"Idempotency-Key": "abc-123"})
    assert first.status_code == 201
    response = post(api_client, body(title="Other"), **{"Idempotency-Key": "abc-123"})
    error = assert_error_shape(response, 422, "idempotency_key_reused")
    assert first.json()["task_id"] in error["message"]
    assert Task.objects.count() == 1


def test_different_keys_create_different_tasks(api_client):
    first = post(api_client, body(), **{"Idempotency-Key": "one"})
    second = post(api_client, body(), **{"Idempotency-Key": "two"})
    assert (first.status_code, second.status_code) == (201, 201)
    assert first.json()["task_id"] != second.json()["task_id"]


def test_without_a_key_each_post_creates_a_task(api_client):
    assert post(api_client, body()).status_code == 201
    assert post(api_client, body()).status_code == 201
    assert Task.objects.count() == 2


@pytest.mark.parametrize("key", ["k" * 201, "   ", "tab\there"])
def test_malformed_key_is_400(api_client, key):
    error = assert_error_shape(
        post(api_client, body(), **{"Idempotency-Key": key}), 400, "invalid"
    )
    assert "Idempotency-Key" in error["fields"]
    assert not Task.objects.exists()


def test_key_of_200_characters_is_accepted(api_client):
    response = post(api_client, body(), **{"Idempotency-Key": "k" * 200})
    assert response.status_code == 201, response.content


def test_keys_are_scoped_per_user(api_client):
    other = token_client(make_user("someone-else"))
    first = post(api_client, body(), **{"Idempotency-Key": "shared"})
    second = post(other, body(), **{"Idempotency-Key": "shared"})
    assert (first.status_code, second.status_code) == (201, 201)
    assert first.json()["task_id"] != second.json()["task_id"]
    assert Task.objects.count() == 2
    # Another user's different body under the same key is no reuse either.
    third = post(other, body(title="Different"), **{"Idempotency-Key": "shared-2"})
    fourth = post(api_client, body(title="Mine"), **{"Idempotency-Key": "shared-2"})
    assert (third.status_code, fourth.status_code) == (201, 201)


def test_a_local_repository_is_not_registered_by_intake(api_client):
    """A file:// URL names a folder on the server: only operators register it."""
    from codex.repositories.models import Repository

    response = api_client.post(
        "/api/tasks/",
        {"repository": "file:///etc/passwd", "title": "x"},
        format="json",
    )
    assert response.status_code == 400
    assert "operator" in str(response.json()["error"]["fields"]["repository"])
    assert not Repository.objects.exists()
