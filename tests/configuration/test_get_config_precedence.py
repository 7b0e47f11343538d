"""get_config: the database, then the environment (CODEX_<KEY>), then the default."""

from __future__ import annotations

import pytest

from codex.configuration.config import get_config
from codex.configuration.models import Setting
from codex.configuration.registry import InvalidSettingValue, UnknownSetting
from tests.configuration.factories import KEY_A, TOKEN

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _keys(settings, monkeypatch):
    settings.CODEX_FERNET_KEYS = KEY_A
    monkeypatch.delenv("CODEX_REVIEW_MAX_ITERATIONS", raising=False)
    monkeypatch.delenv("CODEX_GITHUB_TOKEN", raising=False)


def test_the_default_applies_when_nothing_is_set():
    assert get_config("review.max_iterations") == 3


def test_the_database_overrides_the_default():
    Setting.objects.put("review.max_iterations", "2", actor="user:alice")

    assert get_config("review.max_iterations") == 2


def test_the_database_overrides_the_environment(monkeypatch):
    monkeypatch.setenv("CODEX_REVIEW_MAX_ITERATIONS", "4")
    assert get_config("review.max_iterations") == 4

    Setting.objects.put("review.max_iterations", "2", actor="user:alice")

    assert get_config("review.max_iterations") == 2


def test_a_key_with_a_django_setting_reads_it_as_its_environment(settings):
    # codex.settings reads CODEX_MAX_RETRIES from the environment at start-up.
    settings.CODEX_MAX_RETRIES = 7
    assert get_config("tasks.max_retries") == 7

    Setting.objects.put("tasks.max_retries", 1, actor="user:alice")

    assert get_config("tasks.max_retries") == 1


def test_a_secret_is_returned_decrypted():
    Setting.objects.put("github.token", TOKEN, actor="user:alice")

    assert get_config("github.token") == TOKEN


def test_a_bad_environment_value_names_the_variable(monkeypatch):
    monkeypatch.setenv("CODEX_REVIEW_MAX_ITERATIONS", "three")

    with pytest.raises(InvalidSettingValue) as caught:
        get_config("review.max_iterations")

    message = str(caught.value)
    assert "CODEX_REVIEW_MAX_ITERATIONS" in message
    assert "'three' is not an integer" in message


def test_a_bad_database_value_names_the_database():
    Setting.objects.create(key="review.timeout_hours", value="a day")

    with pytest.raises(InvalidSettingValue, match="from the database"):
        get_config("review.timeout_hours")


def test_a_value_outside_the_bounds_is_refused():
    # Spec 004: "CHECK (review_iteration > 0 AND review_iteration <= 5)"
    with pytest.raises(InvalidSettingValue, match="above the maximum 5"):
        Setting.objects.put("review.max_iterations", 6, actor="user:alice")
    assert not Setting.objects.exists()


def test_an_unknown_key_is_refused():
    with pytest.raises(UnknownSetting, match="review.max_iterations"):
        get_config("review.max_iteration")
