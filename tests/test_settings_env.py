"""codex.env: typed environment readers that refuse bad values, naming the
variable; and settings that stop at start-up on them."""

from __future__ import annotations

import os
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from codex.env import (
    env_amount,
    env_bool,
    env_choice,
    env_int,
    env_list,
    env_pairs,
    env_str,
)

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


# -- env_pairs --------------------------------------------------------------------


def test_env_pairs_splits_items_at_their_first_equals_sign():
    environ = {"E": "A=1, B=x=y ,C=,PYTEST_DISABLE_PLUGIN_AUTOLOAD=1"}
    assert env_pairs("E", environ=environ) == {
        "A": "1",
        "B": "x=y",
        "C": "",
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
    }


@pytest.mark.parametrize("environ", [{}, {"E": ""}, {"E": " , "}])
def test_env_pairs_unset_or_blank_is_empty(environ):
    assert env_pairs("E", environ=environ) == {}


def test_env_pairs_refuses_an_item_without_equals_naming_it():
    with pytest.raises(ImproperlyConfigured, match="CODEX_SANDBOX_ENV") as info:
        env_pairs("CODEX_SANDBOX_ENV", environ={"CODEX_SANDBOX_ENV": "A=1,OOPS"})
    assert "'OOPS'" in str(info.value) and "KEY=VALUE" in str(info.value)


# -- env_amount -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"), [("12.50", Decimal("12.50")), (" 0 ", Decimal(0))]
)
def test_env_amount_parses_a_decimal(raw, expected):
    amount = env_amount("USD", "1", environ={"USD": raw})
    assert amount == expected and isinstance(amount, Decimal)


def test_env_amount_unset_is_the_default():
    assert env_amount("USD", "10", environ={}) == Decimal("10")


@pytest.mark.parametrize("raw", ["", "ten", "1,5", "-0.01", "NaN"])
def test_env_amount_refuses_what_is_not_an_amount_at_least_the_minimum(raw):
    with pytest.raises(ImproperlyConfigured, match="CODEX_AGENT_MAX_COST_USD") as info:
        env_amount(
            "CODEX_AGENT_MAX_COST_USD", "10", environ={"CODEX_AGENT_MAX_COST_USD": raw}
        )
    assert str(info.value).endswith("is not an amount >= 0")


def test_env_amount_minimum_is_inclusive():
    assert env_amount("USD", "1", minimum=Decimal(1), environ={}) == Decimal(1)
    with pytest.raises(ImproperlyConfigured, match=">= 1"):
        env_amount("USD", "1", minimum=Decimal(1), environ={"USD": "0.99"})


# -- settings at start-up -------------------------------------------------------------


def load_settings_environ() -> dict[str, str]:
    """This process's environment without the variables settings read."""
    return {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("CODEX_") and key not in ("DEBUG", "DATABASE_URL")
    }


def load_settings(
    code: str = "import codex.settings", **variables: str
) -> subprocess.CompletedProcess:
    """Run `code` (by default, import codex.settings) in a fresh process with
    `variables` set."""
    environ = {**load_settings_environ(), **variables}
    return subprocess.run(
        [sys.executable, "-c", code],
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
        ({"CODEX_TASK_MAX_COST_USD": "-1"}, "CODEX_TASK_MAX_COST_USD"),
        ({"CODEX_AGENT_MAX_COST_USD": "ten"}, "CODEX_AGENT_MAX_COST_USD"),
        ({"CODEX_SANDBOX_ENV": "A=1,PYTEST_DISABLE"}, "'PYTEST_DISABLE'"),
        ({"CODEX_SETUP_EGRESS_NETWORKS": "10.0.0.0/8,intranet"}, "'intranet'"),
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


def test_settings_read_the_sandbox_env_and_the_amounts(tmp_path):
    result = load_settings(
        "from codex import settings as s; "
        "print(s.CODEX_SANDBOX_ENV, repr(s.CODEX_AGENT_MAX_COST_USD), "
        "repr(s.CODEX_TASK_MAX_COST_USD))",
        CODEX_VAR_DIR=str(tmp_path),
        DEBUG="1",
        CODEX_SANDBOX_ENV="PYTEST_DISABLE_PLUGIN_AUTOLOAD=1,X=a=b",
        CODEX_AGENT_MAX_COST_USD="2.5",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[0] == (
        "{'PYTEST_DISABLE_PLUGIN_AUTOLOAD': '1', 'X': 'a=b'} "
        "Decimal('2.5') Decimal('50')"
    )
