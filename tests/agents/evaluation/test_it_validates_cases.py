"""Validating a case: which tests are FAIL_TO_PASS and PASS_TO_PASS follows
from three runs (the base as the agents get it, with the hidden tests, and
with the reference too), and `--write` puts the lists into the file."""

from __future__ import annotations

import pytest

from agents.evaluation.cases import load_case, load_suite
from agents.evaluation.validate import lists, validate, write_lists


def test_lists_from_the_three_runs():
    seen = {"kept": "passed", "changed": "passed", "bug": "failed", "same": "passed"}
    base = {"kept": "passed", "changed": "failed", "bug": "failed", "new": "failed"}
    gold = {
        "kept": "passed",
        "changed": "passed",
        "bug": "passed",
        "new": "passed",
        "same": "passed",  # missing with the hidden tests: its module broke
        "easy": "passed",  # a hidden test that passes without the change
        "old": "failed",
    }
    base["easy"] = "passed"

    f2p, p2p = lists(seen, base, gold)

    assert f2p == ["bug", "changed", "new"]
    assert p2p == ["kept", "same"]


@pytest.mark.django_db
def test_validating_writes_what_the_runs_say(mini_suite, venv_toolchain, tmp_path):
    path = mini_suite / "mini-mul.toml"
    path.write_text(
        path.read_text()
        .replace('fail_to_pass = ["tests/test_mini.py::test_mul"]', "fail_to_pass = []")
        .replace('pass_to_pass = ["tests/test_mini.py::test_add"]', "pass_to_pass = []")
    )
    (case,) = load_suite(mini_suite, check_lists=False)

    found = validate(case, tmp_path / "validate", tmp_path / "cache")
    write_lists(path, found.fail_to_pass, found.pass_to_pass)

    assert found.fail_to_pass == ["tests/test_mini.py::test_mul"]
    assert found.pass_to_pass == ["tests/test_mini.py::test_add"]
    assert found.failing_on_both == ["tests/test_mini.py::test_float_sum"]
    assert "no test fails without the reference" not in " ".join(found.problems)
    again = load_case(path)
    assert list(again.tests.fail_to_pass) == ["tests/test_mini.py::test_mul"]
    assert list(again.tests.pass_to_pass) == ["tests/test_mini.py::test_add"]
