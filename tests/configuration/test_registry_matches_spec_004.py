"""Spec 004 "Database-Stored Configuration": every key, its default, its secrecy."""

from __future__ import annotations

import pytest

from codex.configuration.config import get_config
from codex.configuration.registry import KEYS, SPEC_004_KEYS

# INSERT INTO user_config (key, value, is_encrypted) VALUES ... (spec 004)
SPEC_004 = {
    "github.token": (None, True),  # 'encrypted_token_here' is a placeholder
    "editor.command": ("code", False),
    "worktrees.base_path": ("./worktrees", False),
    "terminal.theme": ("dark", False),
    "instances.cleanup_policy": ("manual", False),
    "review.max_iterations": (3, False),
    "review.auto_abandon_after": (5, False),
    "review.timeout_hours": (24, False),
}


def test_the_registry_holds_every_spec_key():
    assert tuple(SPEC_004) == SPEC_004_KEYS
    assert set(SPEC_004) <= set(KEYS)


@pytest.mark.django_db
@pytest.mark.parametrize(("key", "expected"), SPEC_004.items())
def test_default_and_secrecy(key, expected, monkeypatch, settings):
    default, secret = expected
    monkeypatch.delenv(KEYS[key].env_var, raising=False)
    if hasattr(settings, KEYS[key].env_var):
        delattr(settings, KEYS[key].env_var)

    assert get_config(key) == default
    assert KEYS[key].secret is secret


def test_environment_variable_names():
    assert KEYS["review.max_iterations"].env_var == "CODEX_REVIEW_MAX_ITERATIONS"
    assert KEYS["github.token"].env_var == "CODEX_GITHUB_TOKEN"
