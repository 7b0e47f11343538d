"""Intake (POST /api/tasks/, /tasks/new/) registers only repositories of the
configured GitHub; everything else is a 400 / form error with the reason."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from rest_framework.test import APIClient

from codex.repositories.intake import intake_repository_url, read_intake_url
from codex.repositories.models import Repository
from codex.tasks.models import Task
from tests.factories import make_repository, make_token, make_user

pytestmark = pytest.mark.django_db

# (the URL, words of the reason it is refused with)
REFUSED = [
    pytest.param("http://127.0.0.1:18803/evil/repo", "https only", id="http-loopback"),
    pytest.param("https://127.0.0.1:18803/evil/repo", "not an IP", id="ipv4-loopback"),
    pytest.param("http://127.0.0.1:5432/x/y", "https only", id="postgresql-port"),
    pytest.param("https://127.0.0.1/x/y", "not an IP", id="ipv4"),
    pytest.param("https://169.254.169.254/a/b", "not an IP", id="metadata-service"),
    pytest.param("https://[::1]/a/b", "not an IP", id="ipv6-loopback"),
    pytest.param("http://[::1]:18800/a/b", "https only", id="ipv6-http-port"),
    pytest.param("https://[::1/a/b", "does not parse", id="broken-ipv6"),
    pytest.param(
        "https://g\u0456thub.com/acme/web", "github.com only", id="cyrillic-i"
    ),
    pytest.param("https://xn--gthub-n2e.com/acme/web", "g\u0456thub", id="punycode"),
    pytest.param(
        "https://\uff47\uff49\uff54\uff48\uff55\uff42.com/a/b",
        "github.com only",
        id="fullwidth-host",
    ),
    pytest.param("https://github.com./acme/web", "trailing dot", id="trailing-dot"),
    pytest.param("https://github.com.evil.io/acme/web", "github.com only", id="suffix"),
    pytest.param("https://evilgithub.com/acme/web", "github.com only", id="prefix"),
    pytest.param("https://gitlab.com/acme/web", "operator", id="another-host"),
    pytest.param("https://github.com:22/acme/web", "port", id="port-22"),
    pytest.param("https://github.com:8443/acme/web", "port", id="port-8443"),
    pytest.param("https://github.com:/acme/web", "port", id="empty-port"),
    pytest.param("https://github.com:99999/acme/web", "does not parse", id="bad-port"),
    pytest.param("https://user:pw@github.com/a/b", "user info", id="credentials"),
    pytest.param("https://git@github.com/a/b", "user info", id="userinfo"),
    pytest.param("https://github.com@evil.io/a/b", "user info", id="at-sign"),
    pytest.param("ssh://git@github.com/a/b", "https only", id="ssh"),
    pytest.param("git@github.com:acme/web.git", "https only", id="scp-like"),
    pytest.param("ftp://github.com/a/b", "https only", id="ftp"),
    pytest.param("file:///srv/git/app.git", "registered by an operator", id="local"),
    pytest.param("github.com/acme/web", "https only", id="no-scheme"),
    pytest.param("https://github.com/\u0430cme/web", "owner", id="cyrillic-owner"),
    pytest.param("https://github.com/acme/w\u0435b", "name", id="cyrillic-name"),
    pytest.param("https://github.com/acme/..", "'..'", id="dot-dot"),
    pytest.param("https://github.com/acme/.", "'.'", id="dot"),
    pytest.param("https://github.com/../web", "owner", id="dot-dot-owner"),
    pytest.param(
        "https://github.com/acme/web%2F..%2F..", "percent-encoding", id="percent-path"
    ),
    pytest.param("https://github.com/%61cme/web", "percent-encoding", id="percent"),
    pytest.param("https://github.com/acme/web\u202e", "U+202E", id="bidi-override"),
    pytest.param("https://github.com/acme/web\u200b", "U+200B", id="zero-width"),
    pytest.param("https://github.com/ac\u00adme/web", "U+00AD", id="soft-hyphen"),
    pytest.param("https://github.com/acme/web\ue000", "U+E000", id="private-use"),
    pytest.param("https://github.com/acme/web\x00", "U+0000", id="nul"),
    pytest.param("https://github.com/acme/w\teb", "U+0009", id="tab"),
    pytest.param("https://github.com/acme/w eb", "spaces", id="space"),
    pytest.param("https://github.com/acme/web?x=1", "query", id="query"),
    pytest.param("https://github.com/acme/web#readme", "fragment", id="fragment"),
    pytest.param("https://github.com/acme", "owner and a repository", id="owner-only"),
    pytest.param("https://github.com/a/b/c", "owner and a repository", id="three"),
    pytest.param("https://github.com//acme/web", "owner and a repository", id="empty"),
    pytest.param("https://github.com/-acme/web", "owner", id="leading-hyphen"),
    pytest.param("https://github.com/acme-/web", "owner", id="trailing-hyphen"),
    pytest.param("https://github.com/ac--me/web", "owner", id="double-hyphen"),
    pytest.param("https://github.com/ac_me/web", "owner", id="underscore-owner"),
    pytest.param(f"https://github.com/{'a' * 40}/web", "at most 39", id="owner-40"),
    pytest.param(f"https://github.com/acme/{'w' * 101}", "at most 100", id="name-101"),
    pytest.param("https://github.com/acme/we$b", "name", id="dollar"),
    pytest.param("not a url", "spaces", id="not-a-url"),
    pytest.param("", "required", id="empty-string"),
]

ACCEPTED = [
    ("https://github.com/acme/web", "https://github.com/acme/web"),
    ("https://GitHub.com/Acme/web", "https://github.com/acme/web"),
    ("https://github.com/acme/web.git", "https://github.com/acme/web"),
    ("https://github.com/acme/web/", "https://github.com/acme/web"),
    ("https://github.com/acme/web.git/", "https://github.com/acme/web"),
    ("  https://github.com/acme/web  ", "https://github.com/acme/web"),
    ("https://github.com:443/acme/web", "https://github.com/acme/web"),
    ("https://github.com/a-c-m-e/My_Repo.js", "https://github.com/a-c-m-e/My_Repo.js"),
    (f"https://github.com/{'a' * 39}/{'w' * 100}", None),
]


@pytest.mark.parametrize(("url", "reason"), REFUSED)
def test_intake_refuses_with_the_reason(url, reason):
    with pytest.raises(ValidationError) as refused:
        intake_repository_url(url)
    assert reason in refused.value.messages[0]


@pytest.mark.parametrize(("url", "canonical"), ACCEPTED)
def test_intake_accepts_and_normalises(url, canonical):
    assert intake_repository_url(url) == (canonical or url)


def operator_api() -> APIClient:
    _, key = make_token(make_user(is_staff=True))
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


def create(client: APIClient, repository: str):
    return client.post(
        "/api/tasks/", {"repository": repository, "title": "x"}, format="json"
    )


# NUL never reaches the serializer (the API's parser refuses it, codex.core.api),
# nor does a blank value (DRF's CharField: "may not be blank").
API_CASES = [case for case in REFUSED if case.id not in ("nul", "empty-string")]


@pytest.mark.parametrize(("url", "reason"), API_CASES)
def test_the_api_answers_400_in_its_error_shape(url, reason):
    response = create(operator_api(), url)

    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert set(error) >= {"code", "message", "fields"}
    assert list(error["fields"]) == ["repository"]
    assert reason in error["fields"]["repository"][0]
    assert not Repository.objects.exists()
    assert not Task.objects.exists()


FORM_CASES = {"http-loopback", "cyrillic-i", "bidi-override", "dot-dot", "local"}


@pytest.mark.parametrize(
    ("url", "reason"), [case for case in REFUSED if case.id in FORM_CASES]
)
def test_the_request_form_shows_the_reason_under_the_field(client, url, reason):
    client.force_login(make_user(is_staff=True))
    response = client.post(
        "/tasks/new/",
        {
            "repository": url,
            "title": "x",
            "priority": "medium",
            "form_token": "0" * 32,
        },
    )

    assert response.status_code == 400
    errors = response.context["form"].errors
    assert list(errors) == ["repository"]
    assert reason in errors["repository"][0]
    assert 'id="id_repository_errors"' in response.content.decode()
    assert not Repository.objects.exists()


def test_a_new_repository_is_registered_under_its_canonical_url():
    response = create(operator_api(), "https://GitHub.com/Acme/Web.git/")

    assert response.status_code == 201, response.content
    assert response.json()["repository"] == "https://github.com/acme/Web"
    repository = Repository.objects.get()
    assert (repository.url, repository.registered_on_first_use) == (
        "https://github.com/acme/Web",
        True,
    )


def test_a_row_stored_with_the_owners_case_is_found_not_registered_twice():
    legacy = make_repository("https://github.com/Codertocat/Hello-World")

    response = create(operator_api(), "https://github.com/Codertocat/Hello-World")

    assert response.status_code == 201, response.content
    assert Repository.objects.get() == legacy


def test_enterprise_intake_accepts_only_the_enterprise_host(settings):
    settings.GITHUB_BASE_URL = "https://ghe.example.com/api/v3"
    assert (
        intake_repository_url("https://GHE.example.com/acme/web.git")
        == "https://ghe.example.com/acme/web"
    )
    with pytest.raises(ValidationError, match="ghe.example.com only"):
        intake_repository_url("https://github.com/acme/web")


def test_data_residency_api_host_maps_to_its_web_host(settings):
    settings.GITHUB_BASE_URL = "https://api.acme.ghe.com"
    assert intake_repository_url("https://acme.ghe.com/a/b") == (
        "https://acme.ghe.com/a/b"
    )


def test_a_url_read_before_is_read_again_for_another_configured_github(settings):
    # Intake keeps the URLs it read; the configured GitHub is part of what
    # it keeps them by, so a reading never outlives the configuration.
    url = "https://ghe.example.com/acme/web"
    assert read_intake_url(url).refusal is not None
    assert read_intake_url(url) is read_intake_url(url)
    settings.GITHUB_BASE_URL = "https://ghe.example.com/api/v3"
    assert read_intake_url(url).refusal is None
    assert read_intake_url(url).canonical == url
    response = create(operator_api(), url)
    assert response.status_code == 201, response.content
    settings.GITHUB_BASE_URL = "https://api.github.com"
    response = create(operator_api(), "https://ghe.example.com/acme/other")
    assert response.status_code == 400
