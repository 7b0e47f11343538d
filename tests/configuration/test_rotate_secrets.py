"""Key rotation: put the new key first, run rotate_secrets, drop the old key."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta

import pytest
from cryptography.fernet import Fernet
from django.core.management import call_command
from django.core.management.base import CommandError

from codex.configuration import crypto
from codex.configuration.models import Setting
from codex.github.models import GitHubToken
from tests.configuration.factories import KEY_A, KEY_B, TOKEN, stored_column

pytestmark = pytest.mark.django_db


def test_rotation_re_encrypts_every_secret_with_the_first_key(settings):
    settings.CODEX_FERNET_KEYS = KEY_A
    setting = Setting.objects.put("github.token", TOKEN, actor="user:alice")
    plain = Setting.objects.put("editor.command", "vim", actor="user:alice")
    cached = GitHubToken.objects.create(name="default")
    cached.store("ghs_installation_token_abcd", datetime.now(UTC) + timedelta(hours=1))
    GitHubToken.objects.filter(pk=cached.pk).update(
        token_encrypted=cached.token_encrypted
    )
    before = stored_column(setting)

    settings.CODEX_FERNET_KEYS = f"{KEY_B},{KEY_A}"
    out = io.StringIO()
    call_command("rotate_secrets", stdout=out)

    after = stored_column(setting)
    assert after != before
    assert Fernet(KEY_B).decrypt(after.encode()).decode() == TOKEN
    assert stored_column(plain) == "vim"  # plain values are left alone
    assert "1 secret setting(s) and 1 cached token(s)" in out.getvalue()

    settings.CODEX_FERNET_KEYS = KEY_B  # the old key can now be removed
    assert Setting.objects.get(pk=setting.pk).plaintext() == TOKEN
    assert GitHubToken.objects.get().token == "ghs_installation_token_abcd"


def test_rotation_without_the_old_key_stops_with_an_error(settings):
    settings.CODEX_FERNET_KEYS = KEY_A
    Setting.objects.put("github.token", TOKEN, actor="user:alice")

    settings.CODEX_FERNET_KEYS = KEY_B
    with pytest.raises(CommandError, match="cannot be decrypted"):
        call_command("rotate_secrets", stdout=io.StringIO())


def test_a_value_changed_during_rotation_is_not_overwritten(settings, monkeypatch):
    settings.CODEX_FERNET_KEYS = f"{KEY_B},{KEY_A}"
    Setting.objects.put("github.token", TOKEN, actor="user:alice")
    real_rotate = crypto.rotate

    def rotate_while_an_operator_saves(token: str) -> str:
        Setting.objects.put("github.token", "ghp_newer_value_9999", actor="user:bob")
        return real_rotate(token)

    monkeypatch.setattr(crypto, "rotate", rotate_while_an_operator_saves)

    assert Setting.objects.reencrypt_all() == 0
    assert Setting.objects.get().plaintext() == "ghp_newer_value_9999"
