"""A repository's test, lint and type-check commands: validated, editable by
operators in the admin, and exposed by the repository API."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from codex.repositories.models import Repository
from tests.admin_forms import form_data
from tests.core.api.conftest import assert_error_shape, role_client
from tests.factories import make_repository, make_user

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "command",
    [
        "python -m pytest -q --junitxml={junit_xml}",
        "ruff check 'src dir'",
        "mypy --strict src",
        "",
    ],
)
def test_commands_that_run_without_a_shell_are_valid(command):
    repository = Repository(url="https://github.com/acme/ok", lint_command=command)
    repository.full_clean()


@pytest.mark.parametrize(
    ("command", "reason"),
    [
        ("pytest 'unclosed", "cannot be parsed"),
        ("/usr/bin/pytest", "Name the program"),
        ("ruff check . && mypy .", "without a shell"),
        ("pytest | tee log", "without a shell"),
        ("pytest\n-q", "control characters"),
    ],
)
def test_commands_a_sandbox_cannot_run_are_refused(command, reason):
    repository = Repository(url="https://github.com/acme/bad", test_command=command)
    with pytest.raises(ValidationError) as caught:
        repository.full_clean()
    assert reason in " ".join(caught.value.message_dict["test_command"])


def test_operators_set_the_commands_when_registering_over_the_api():
    client = role_client("operator", "ops")
    response = client.post(
        "/api/repositories/",
        {
            "url": "https://github.com/acme/checked",
            "test_command": "pytest -q --junitxml={junit_xml}",
            "lint_command": "ruff check .",
        },
        format="json",
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["test_command"] == "pytest -q --junitxml={junit_xml}"
    assert body["lint_command"] == "ruff check ."
    assert body["type_check_command"] == ""

    bad = client.post(
        "/api/repositories/",
        {"url": "https://github.com/acme/other", "lint_command": "ruff . ; rm -rf /"},
        format="json",
    )
    assert "lint_command" in assert_error_shape(bad, 400)["fields"]


def test_operators_edit_the_commands_in_the_admin(client):
    client.force_login(make_user("root", is_staff=True, is_superuser=True))
    repository = make_repository("https://github.com/acme/admin")
    url = f"/admin/repositories/repository/{repository.pk}/change/"
    page = client.get(url)
    assert page.status_code == 200
    assert "Verification commands" in page.content.decode()

    data = form_data(page.content.decode(), "repository_form")
    data["type_check_command"] = ["mypy src"]
    response = client.post(url, data)

    assert response.status_code == 302, response.content.decode()[:2000]
    repository.refresh_from_db()
    assert repository.type_check_command == "mypy src"
