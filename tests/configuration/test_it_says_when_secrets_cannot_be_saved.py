"""Without an encryption key (production settings that lack CODEX_FERNET_KEYS),
saving a secret in the console shows a message naming the variable, not a 500;
and the settings list still renders."""

from __future__ import annotations

import pytest
from django.urls import reverse

from codex.configuration.models import Setting
from tests.configuration.factories import KEY_A, TOKEN

pytestmark = pytest.mark.django_db


@pytest.fixture
def without_keys(settings, monkeypatch):
    monkeypatch.delenv("CODEX_FERNET_KEYS", raising=False)
    settings.CODEX_FERNET_KEYS = ""
    settings.DEBUG = False
    settings.TESTING = False


def test_saving_a_secret_without_keys_is_a_form_error(console, without_keys):
    response = console.post(
        reverse("admin:configuration_setting_add"),
        {"key": "github.token", "new_value": TOKEN},
    )

    assert response.status_code == 200
    html = response.content.decode()
    assert "This secret cannot be saved" in html
    assert "CODEX_FERNET_KEYS must be set" in html
    assert TOKEN not in html
    assert not Setting.objects.exists()


def test_the_list_renders_a_stored_secret_without_keys(console, settings, without_keys):
    settings.CODEX_FERNET_KEYS = KEY_A
    Setting.objects.put("github.token", TOKEN, actor="user:alice")
    settings.CODEX_FERNET_KEYS = ""

    response = console.get(reverse("admin:configuration_setting_changelist"))

    assert response.status_code == 200
    assert "no encryption key configured" in response.content.decode()
