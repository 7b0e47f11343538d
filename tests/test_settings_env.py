"""codex.env: typed environment readers that refuse bad values, naming the
variable; and settings that stop at start-up on them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from codex.env import env_bool, env_choice, env_int, env_list, env_str

ROOT = Path(__file__).resolve().parent.parent


# -- env_bool ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("1", True),
        ("true", True),
        ("True", True),
        ("YES", True),
        ("yes", True),
        ("on", True),
        (" on ", True),
        ("0", False),
        ("false", False),
        ("FALSE", False),
        ("no", False),
        ("off", False),
        ("", False),
    ],
)
def test_env_bool_accepts(raw, expected):
    assert env_bool("FLAG", not expected, environ={"FLAG": raw}) is expected


@pytest.mark.parametrize("default", [True, False])
def test_env_bool_unset_is_the_default(default):
    assert env_bool("FLAG", default, environ={"OTHER": "1"}) is default


@pytest.mark.parametrize("raw", ["ture", "2", "y", "enabled", "-1"])
def test_env_bool_refuses_anything_else_naming_the_variable(raw):
    with pytest.raises(ImproperlyConfigured, match="DEBUG") as info:
        env_bool("DEBUG", False, environ={"DEBUG": raw})
    assert repr(raw) in str(info.value)


def test_env_bool_reads_os_environ_by_default(monkeypatch):
    monkeypatch.setenv("CODEX_TEST_FLAG", "yes")
    assert env_bool("CODEX_TEST_FLAG", False) is True


# -- env_int ----------------------------------------------------------------------


def test_env_int_parses():
    assert env_int("N", 1, environ={"N": "42"}) == 42
    assert env_int("N", 1, environ={"N": " -3 "}) == -3


@pytest.mark.parametrize("environ", [{}, {"N": ""}, {"N": "  "}])
def test_env_int_unset_or_blank_is_the_default(environ):
    assert env_int("N", 7, environ=environ) == 7


@pytest.mark.parametrize("raw", ["two", "1.5", "3x", "0x10"])
def test_env_int_refuses_non_integers(raw):
    with pytest.raises(ImproperlyConfigured, match="CODEX_WORKERS") as info:
        env_int("CODEX_WORKERS", 2, environ={"CODEX_WORKERS": raw})
    assert "not an integer" in str(info.value)


def test_env_int_bounds_are_inclusive():
    environ = {"N": "5"}
    assert env_int("N", 1, minimum=5, maximum=5, environ=environ) == 5


def test_env_int_refuses_below_the_minimum():
    with pytest.raises(ImproperlyConfigured, match=r"N=0 is below the minimum 1"):
        env_int("N", 2, minimum=1, environ={"N": "0"})


def test_env_int_refuses_above_the_maximum():
    with pytest.raises(ImproperlyConfigured, match=r"N=65 is above the maximum 64"):
        env_int("N", 2, maximum=64, environ={"N": "65"})


def test_env_int_checks_the_default_against_the_bounds_too():
    with pytest.raises(ImproperlyConfigured, match="minimum"):
        env_int("N", 0, minimum=1, environ={})


# -- env_list, env_str, env_choice ---------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("a,b,c", ["a", "b", "c"]),
        (" a , b ", ["a", "b"]),
        ("a,,b,", ["a", "b"]),
        ("single", ["single"]),
        ("", []),
        (" , ", []),
    ],
)
def test_env_list_splits_commas(raw, expected):
    assert env_list("HOSTS", ["default"], environ={"HOSTS": raw}) == expected


def test_env_list_unset_is_a_copy_of_the_default():
    default = ["localhost"]
    result = env_list("HOSTS", default, environ={})
    assert result == ["localhost"]
    result.append("changed")
    assert default == ["localhost"]


def test_env_str():
    assert env_str("S", "dflt", environ={}) == "dflt"
    assert env_str("S", "dflt", environ={"S": "  value "}) == "value"
    assert env_str("S", "dflt", environ={"S": ""}) == ""


def test_env_choice_accepts_a_choice():
    choices = ("debug", "info")
    assert env_choice("LEVEL", "info", choices, environ={"LEVEL": "debug"}) == "debug"
    assert env_choice("LEVEL", "info", choices, environ={}) == "info"


@pytest.mark.parametrize("raw", ["verbose", "DEBUG", ""])
def test_env_choice_refuses_unknown_values(raw):
    with pytest.raises(ImproperlyConfigured, match="LEVEL") as info:
        env_choice("LEVEL", "info", ("debug", "info"), environ={"LEVEL": raw})
    assert "debug, info" in str(info.value)


# -- settings at start-up -------------------------------------------------------------


def load_settings(**variables: str) -> subprocess.CompletedProcess:
    """Import codex.settings in a fresh process with `variables` set."""
    environ = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("CODEX_") and key not in ("DEBUG", "DATABASE_URL")
    }
    environ.update(variables)
    return subprocess.run(
        [sys.executable, "-c", "import codex.settings"],
        cwd=ROOT,
        env=environ,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize(
    ("variables", "named"),
    [
        ({"DEBUG": "ture"}, "DEBUG"),
        ({"CODEX_WORKERS": "two"}, "CODEX_WORKERS"),
        ({"CODEX_WORKERS": "0"}, "CODEX_WORKERS"),
        ({"CODEX_JOB_TIMEOUT": "600", "CODEX_JOB_RETRY": "600"}, "CODEX_JOB_RETRY"),
        ({"DATABASE_URL": "mysql://u@h/db"}, "DATABASE_URL"),
        ({"CODEX_REQUIRE_SECRET_KEY": "1", "SECRET_KEY": ""}, "SECRET_KEY"),
    ],
)
def test_settings_refuse_bad_values_at_start_up(variables, named, tmp_path):
    result = load_settings(
        **{"CODEX_VAR_DIR": str(tmp_path), "DEBUG": "1", **variables}
    )
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr
    assert named in result.stderr.splitlines()[-1]


def test_settings_load_with_defaults(tmp_path):
    result = load_settings(CODEX_VAR_DIR=str(tmp_path), DEBUG="1")
    assert result.returncode == 0, result.stderr
