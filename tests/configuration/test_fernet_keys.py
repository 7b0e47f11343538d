"""CODEX_FERNET_KEYS: comma-separated keys, the first one current; a development
key derived from SECRET_KEY only with DEBUG or in tests."""

from __future__ import annotations

import pytest
from cryptography.fernet import Fernet
from django.core.exceptions import ImproperlyConfigured

from codex.configuration import crypto
from tests.configuration.factories import KEY_A, KEY_B


def test_the_first_key_encrypts_and_every_key_decrypts(settings):
    settings.CODEX_FERNET_KEYS = f"{KEY_A}, {KEY_B}"
    by_b = Fernet(KEY_B).encrypt(b"old").decode()

    token = crypto.encrypt("new")

    assert Fernet(KEY_A).decrypt(token.encode()) == b"new"
    assert crypto.decrypt(by_b) == "old"


def test_keys_may_also_come_from_the_environment(settings, monkeypatch):
    del settings.CODEX_FERNET_KEYS
    monkeypatch.setenv("CODEX_FERNET_KEYS", KEY_B)

    assert Fernet(KEY_B).decrypt(crypto.encrypt("x").encode()) == b"x"


def test_without_keys_tests_use_a_stable_key_derived_from_secret_key(
    settings, monkeypatch
):
    settings.CODEX_FERNET_KEYS = ""
    monkeypatch.delenv("CODEX_FERNET_KEYS", raising=False)
    token = crypto.encrypt("dev")

    assert Fernet(crypto.development_key()).decrypt(token.encode()) == b"dev"
    settings.SECRET_KEY = "another-secret-key-" + "y" * 40
    with pytest.raises(crypto.SecretUnreadable):
        crypto.decrypt(token)


def test_without_keys_production_refuses_to_start(settings, monkeypatch):
    settings.CODEX_FERNET_KEYS = ""
    settings.DEBUG = False
    settings.TESTING = False
    monkeypatch.delenv("CODEX_FERNET_KEYS", raising=False)

    with pytest.raises(ImproperlyConfigured, match="CODEX_FERNET_KEYS must be set"):
        crypto.encrypt("x")


def test_a_malformed_key_is_named_by_position_and_not_echoed(settings):
    settings.CODEX_FERNET_KEYS = f"{KEY_A},not-a-real-key-value"

    with pytest.raises(ImproperlyConfigured) as caught:
        crypto.encrypt("x")

    assert "entry #2" in str(caught.value)
    assert "not-a-real-key-value" not in str(caught.value)


@pytest.mark.parametrize(
    ("secret", "shown"),
    [
        ("ghp_abcdefghijklmnop1234", "••••1234"),
        ("short-secret", "••••cret"),  # 12 characters: the tail may show
        ("tiny-secret", "••••"),  # 11: showing 4 would give away too much
        ("", ""),
    ],
)
def test_masking_shows_at_most_the_last_four_characters(secret, shown):
    assert crypto.mask(secret) == shown
