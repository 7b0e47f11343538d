"""Secrets are masked everywhere the console shows them: "••••" and at most the
last four characters; the form takes a new value and blank keeps the old one."""

from __future__ import annotations

import pytest
from django.urls import reverse

from codex.configuration.models import Setting
from tests.configuration.factories import TOKEN, stored_column

pytestmark = pytest.mark.django_db

LIST_URL = reverse("admin:configuration_setting_changelist")


def change_url(setting: Setting) -> str:
    return reverse("admin:configuration_setting_change", args=[setting.pk])


@pytest.fixture
def secret(console):
    return Setting.objects.put("github.token", TOKEN, actor="user:alice")


def test_the_list_shows_the_mask_and_never_the_secret(console, secret):
    html = console.get(LIST_URL).content.decode()

    assert "••••" + TOKEN[-4:] in html
    assert TOKEN not in html
    assert stored_column(secret) not in html  # nor the ciphertext


def test_the_change_page_shows_the_mask_and_never_the_secret(console, secret):
    html = console.get(change_url(secret)).content.decode()

    assert "••••" + TOKEN[-4:] in html
    assert TOKEN not in html
    assert TOKEN[:-4] not in html
    assert stored_column(secret) not in html


def test_a_blank_value_keeps_the_secret(console, secret):
    response = console.post(change_url(secret), {"new_value": ""})

    assert response.status_code == 302
    assert Setting.objects.get(pk=secret.pk).plaintext() == TOKEN


def test_a_new_value_replaces_the_secret_encrypted(console, secret):
    console.post(change_url(secret), {"new_value": "ghp_rotated_by_operator_7777"})

    secret.refresh_from_db()
    assert secret.plaintext() == "ghp_rotated_by_operator_7777"
    assert "ghp_rotated" not in stored_column(secret)
    assert secret.updated_by.startswith("user:")


def test_an_invalid_value_is_refused_with_the_reason(console):
    setting = Setting.objects.put("review.timeout_hours", 24, actor="user:alice")

    response = console.post(change_url(setting), {"new_value": "a day"})

    assert response.status_code == 200
    assert "is not an integer" in response.content.decode()
    assert Setting.objects.get(pk=setting.pk).typed_value() == 24


def test_adding_a_secret_encrypts_it_and_a_rejected_form_does_not_echo_it(console):
    url = reverse("admin:configuration_setting_add")
    rejected = console.post(url, {"key": "no.such.key", "new_value": TOKEN})
    assert rejected.status_code == 200
    assert TOKEN not in rejected.content.decode()

    console.post(url, {"key": "github.token", "new_value": TOKEN})

    setting = Setting.objects.get(key="github.token")
    assert setting.is_encrypted
    assert setting.plaintext() == TOKEN


def test_the_change_list_runs_a_constant_number_of_queries(
    console, django_assert_max_num_queries
):
    for key in ("editor.command", "terminal.theme", "github.token"):
        Setting.objects.put(key, "value-long-enough-1234", actor="user:alice")
    with django_assert_max_num_queries(8) as few:
        assert console.get(LIST_URL).status_code == 200
    # Eight keys is the whole registry; compare 3 rows with all 8.
    for key in (
        "worktrees.base_path",
        "instances.cleanup_policy",
        "review.max_iterations",
        "review.auto_abandon_after",
        "review.timeout_hours",
    ):
        Setting.objects.create(key=key, value="3")
    with django_assert_max_num_queries(len(few.captured_queries)):
        assert console.get(LIST_URL).status_code == 200
