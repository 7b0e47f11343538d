"""Other hosts and the local forge are an operator's to register (console and
POST /api/repositories/, as before); intake may then use them, but a row it
registered itself before URLs were checked does not vouch for its URL."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from codex.repositories.models import Forge, Repository, normalize_repository_url
from codex.tasks.models import Task
from tests.factories import make_token, make_user

pytestmark = pytest.mark.django_db


def api(*, operator: bool) -> APIClient:
    _, key = make_token(make_user(is_staff=operator))
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


@pytest.mark.parametrize(
    ("url", "stored", "forge"),
    [
        (
            "https://git.example.com/acme/web.git",
            "https://git.example.com/acme/web",
            Forge.GITHUB,
        ),
        ("file:///srv/git/app.git", "file:///srv/git/app.git", Forge.LOCAL),
        ("http://[::1]:18800/a/b", "http://[::1]:18800/a/b", Forge.GITHUB),
    ],
)
def test_an_operator_registers_another_host_and_intake_may_use_it(url, stored, forge):
    registered = api(operator=True).post(
        "/api/repositories/", {"url": url}, format="json"
    )
    assert registered.status_code == 201, registered.content
    repository = Repository.objects.get()
    assert (repository.url, repository.forge) == (stored, forge)

    created = api(operator=True).post(
        "/api/tasks/", {"repository": url, "title": "x"}, format="json"
    )
    assert created.status_code == 201, created.content
    assert Task.objects.get().repository == repository


def test_an_ipv6_host_keeps_its_brackets():
    assert normalize_repository_url("http://[::1]:18800/a/b/") == (
        "http://[::1]:18800/a/b"
    )


@pytest.mark.parametrize("url", ["https://[::1/a/b", "https://h.example:99999/a/b"])
def test_a_url_that_does_not_parse_is_a_reason_not_a_crash(url):
    response = api(operator=True).post(
        "/api/repositories/", {"url": url}, format="json"
    )
    assert response.status_code == 400, response.content
    assert "does not parse" in response.json()["error"]["fields"]["url"][0]


def test_a_row_intake_registered_before_urls_were_checked_is_refused():
    Repository.objects.create(
        url="http://127.0.0.1:18803/evil/repo", registered_on_first_use=True
    )
    response = api(operator=True).post(
        "/api/tasks/",
        {"repository": "http://127.0.0.1:18803/evil/repo", "title": "x"},
        format="json",
    )
    assert response.status_code == 400, response.content
    assert "https only" in response.json()["error"]["fields"]["repository"][0]
    assert not Task.objects.exists()
