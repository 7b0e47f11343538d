"""Spec 004: "value TEXT NOT NULL, -- Encrypted for sensitive values" and
"Security: Encrypt sensitive configuration values like GitHub tokens"."""

from __future__ import annotations

import pytest
from cryptography.fernet import Fernet

from codex.configuration.models import Setting
from codex.events.models import Event
from tests.configuration.factories import KEY_A, TOKEN, stored_column

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _keys(settings):
    settings.CODEX_FERNET_KEYS = KEY_A


def test_the_stored_column_never_contains_the_plaintext():
    setting = Setting.objects.put("github.token", TOKEN, actor="user:alice")

    column = stored_column(setting)
    assert TOKEN not in column
    assert TOKEN[-4:] not in column
    assert setting.is_encrypted
    assert Fernet(KEY_A).decrypt(column.encode()).decode() == TOKEN
    assert Setting.objects.get(pk=setting.pk).plaintext() == TOKEN


def test_a_plain_key_is_stored_as_text():
    setting = Setting.objects.put("review.max_iterations", 4, actor="user:alice")

    assert stored_column(setting) == "4"
    assert not setting.is_encrypted
    assert setting.typed_value() == 4


def test_the_change_is_logged_without_the_value():
    Setting.objects.put("github.token", TOKEN, actor="user:alice")

    event = Event.objects.get(subject="setting:github.token")
    assert event.actor == "user:alice"
    assert TOKEN not in f"{event.reason} {event.data}"


def test_a_second_put_replaces_the_value_in_the_same_row():
    Setting.objects.put("github.token", TOKEN, actor="user:alice")
    Setting.objects.put("github.token", "ghp_replacement_value_0000", actor="user:bob")

    assert Setting.objects.count() == 1
    assert Setting.objects.get().plaintext() == "ghp_replacement_value_0000"
