"""The feature-request form: the team page's intake, whose tasks are created by
`form` (docs/domain/tasks.md#created-by)."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from django.urls import reverse

from codex.events.models import EventKind
from codex.repositories.models import Repository
from codex.tasks.models import Task
from tests.factories import make_repository, make_user

pytestmark = pytest.mark.django_db

URL = "/tasks/new/"
TOKEN = "0123456789abcdef0123456789abcdef"


def request_data(**overrides) -> dict:
    data = {
        "repository": "https://github.com/acme/web.git",
        "title": "Add login",
        "description": "As a user, I want to log in.",
        "priority": "high",
        "acceptance_criteria": "- Users can log in",
        "form_token": TOKEN,
    }
    data.update(overrides)
    return data


def token_in(content: bytes) -> str:
    match = re.search(rb'name="form_token" value="([0-9a-f]+)"', content)
    assert match, "the form has no token"
    return match.group(1).decode()


def test_url_is_the_one_the_nav_uses():
    assert reverse("pages:request_form") == URL


def test_each_rendering_carries_a_fresh_token(member_client):
    first = member_client.get(URL)
    second = member_client.get(URL)
    assert first.status_code == 200
    assert len(token_in(first.content)) == 32
    assert token_in(first.content) != token_in(second.content)
    assert b'name="csrfmiddlewaretoken"' in first.content


def test_submitting_creates_a_form_task_and_shows_it(member_client):
    response = member_client.post(URL, request_data())

    task = Task.objects.get()
    assert response.status_code == 302
    assert response["Location"] == reverse("pages:task", args=[task.task_id])
    assert (task.title, task.priority, task.created_by) == ("Add login", "high", "form")
    assert task.description == "As a user, I want to log in."
    assert task.acceptance_criteria == "- Users can log in"
    # The URL is normalized exactly as the API does it.
    assert task.repository.url == "https://github.com/acme/web"
    created = task.events.get(kind=EventKind.CREATED)
    assert created.actor == "user:bob"


def test_double_submit_of_one_rendering_creates_one_task(member_client):
    first = member_client.post(URL, request_data())
    second = member_client.post(URL, request_data())

    assert Task.objects.count() == 1
    assert first["Location"] == second["Location"]
    page = member_client.get(second["Location"])
    assert b"already submitted" in page.content


def test_two_renderings_are_two_tasks(member_client):
    member_client.post(URL, request_data(form_token="a" * 32))
    member_client.post(URL, request_data(form_token="b" * 32))
    assert Task.objects.count() == 2


def test_a_token_is_scoped_to_the_person(member_client, client):
    member_client.post(URL, request_data())
    other = Client()
    other.force_login(make_user("carol"))
    other.post(URL, request_data())
    assert Task.objects.count() == 2
    assert {t.events.get(kind="created").actor for t in Task.objects.all()} == {
        "user:bob",
        "user:carol",
    }


def test_same_rendering_with_edited_content_is_refused_with_a_fresh_token(
    member_client,
):
    member_client.post(URL, request_data())
    task = Task.objects.get()

    response = member_client.post(URL, request_data(title="Add logout"))

    assert response.status_code == 409
    content = response.content.decode()
    assert f"already submitted as task {task.task_id}" in content
    assert token_in(response.content) != TOKEN
    # Submitting the re-rendered form makes the second task.
    again = member_client.post(
        URL, request_data(title="Add logout", form_token=token_in(response.content))
    )
    assert again.status_code == 302
    assert Task.objects.count() == 2


@pytest.mark.parametrize(
    ("overrides", "field", "message"),
    [
        ({"title": ""}, "title", "This field is required."),
        ({"title": "x" * 201}, "title", "at most 200 characters"),
        ({"title": "bad\x07title"}, "title", "cannot contain control characters"),
        ({"repository": ""}, "repository", "This field is required."),
        (
            {"repository": "ftp://example.com/a/b"},
            "repository",
            "must look like https://github.com/owner/name",
        ),
        (
            {"repository": "https://github.com/only-owner"},
            "repository",
            "must name an owner and a repository",
        ),
        (
            {"repository": "file:///srv/git/app.git"},
            "repository",
            "registered by an operator",
        ),
        ({"priority": "urgent"}, "priority", "Select a valid choice"),
        ({"description": "d" * 50_001}, "description", "at most 50000 characters"),
    ],
)
def test_invalid_input_shows_the_message_under_its_field(
    member_client, overrides, field, message
):
    response = member_client.post(URL, request_data(**overrides))

    assert response.status_code == 400
    assert not Task.objects.exists()
    errors = response.context["form"].errors
    assert list(errors) == [field]
    assert message in " ".join(errors[field])
    # Shown on the page, next to the field (the id ties it to the input).
    assert f'id="id_{field}_errors"' in response.content.decode()
    # What the person typed is kept.
    if field != "title":
        assert 'value="Add login"' in response.content.decode()


def test_repository_that_refuses_tasks(member_client):
    make_repository("https://github.com/acme/web", accepts_tasks=False)
    response = member_client.post(URL, request_data())
    assert response.status_code == 400
    assert "does not accept new tasks" in response.content.decode()


def test_registered_repositories_only(member_client, settings):
    settings.CODEX_INTAKE_REGISTERED_REPOSITORIES_ONLY = True
    response = member_client.post(URL, request_data())
    assert response.status_code == 400
    assert "not registered with Codex" in response.content.decode()
    assert not Repository.objects.exists()


@pytest.mark.parametrize("token", ["", "not-a-token", "A" * 32])
def test_missing_or_forged_token_is_refused(member_client, token):
    response = member_client.post(URL, request_data(form_token=token))
    assert response.status_code == 400
    assert "This form has expired" in response.content.decode()
    assert not Task.objects.exists()


def test_csrf_is_enforced(member):
    client = Client(enforce_csrf_checks=True)
    client.force_login(member)
    response = client.post(URL, request_data())
    assert response.status_code == 403
    assert not Task.objects.exists()


def test_script_in_the_title_is_shown_as_text(member_client):
    title = '<script>alert("x")</script>'
    response = member_client.post(URL, request_data(title=title), follow=True)

    content = response.content.decode()
    assert "<script>alert" not in content
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in content
    # And in the dashboard's task list.
    dashboard = member_client.get(reverse("pages:dashboard")).content.decode()
    assert "<script>alert" not in dashboard
    assert "&lt;script&gt;" in dashboard
