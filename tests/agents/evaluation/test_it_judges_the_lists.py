"""The judge: FAIL_TO_PASS must pass and PASS_TO_PASS keep passing on the
merged main, run in the jail with the project's runner after the agent's
edits to the test files are set aside. A test already failing on the base
and in neither list does not block resolution; a broken PASS_TO_PASS test
does."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.test import override_settings

from agents.demo import git
from agents.evaluation.cases import load_suite
from agents.evaluation.judge import judge, verdict_of
from agents.evaluation.sources import prepare
from tests.agents.evaluation.conftest import MINI, VENV_TOOLCHAIN

F2P, P2P = ["t::new"], ["t::kept"]


def test_a_failure_outside_the_lists_does_not_block_resolution():
    status = {"t::new": "passed", "t::kept": "passed", "t::old": "failed"}

    verdict = verdict_of(status, F2P, P2P, exit_code=1)

    assert verdict.resolved and verdict.note == ""


def test_a_broken_pass_to_pass_test_blocks_resolution():
    status = {"t::new": "passed", "t::kept": "failed"}

    verdict = verdict_of(status, F2P, P2P, exit_code=1)

    assert not verdict.resolved
    assert verdict.pass_to_pass["failure"] == ["t::kept"]
    assert "PASS_TO_PASS broken: t::kept" in verdict.note


@pytest.mark.parametrize(
    ("status", "exit_code", "why"),
    [
        ({"t::kept": "passed"}, 0, "FAIL_TO_PASS not passing: t::new"),
        ({"t::new": "skipped", "t::kept": "passed"}, 0, "FAIL_TO_PASS not passing"),
        ({"t::new": "passed"}, 0, "PASS_TO_PASS broken: t::kept"),
        ({}, 0, "reported no test"),
        ({"t::new": "passed", "t::kept": "passed"}, None, "timed out"),
        ({"t::new": "passed", "t::kept": "passed"}, 2, "without a failing test"),
    ],
)
def test_what_is_not_resolved(status, exit_code, why):
    verdict = verdict_of(status, F2P, P2P, exit_code=exit_code)

    assert not verdict.resolved
    assert why in verdict.note


def test_a_skipped_pass_to_pass_test_is_kept():
    status = {"t::new": "passed", "t::kept": "skipped"}

    assert verdict_of(status, F2P, P2P, exit_code=0).resolved


# -- on a real repository, in the jail --------------------------------------------


@pytest.fixture
def prepared(mini_suite, tmp_path):
    (case,) = load_suite(mini_suite)
    return prepare(case, tmp_path / "remotes", tmp_path / "cache")


def merge(prepared, files: dict[str, str], tmp_path: Path) -> None:
    """What an agent's merged pull request leaves on main."""
    work = tmp_path / "merge"
    git("clone", "--quiet", str(prepared.bare), str(work), cwd=tmp_path)
    for path, text in files.items():
        (work / path).write_text(text)
    git("add", "--all", cwd=work)
    git("-c", "commit.gpgsign=false", "commit", "--quiet", "-m", "merge", cwd=work)
    git("push", "--quiet", "origin", "main", cwd=work)


def judged(prepared):
    with override_settings(**VENV_TOOLCHAIN.settings()):
        return judge(prepared)


def test_the_change_is_resolved_though_a_test_failed_on_the_base(prepared, tmp_path):
    merge(prepared, {"mini.py": MINI["mini.py"]}, tmp_path)

    verdict = judged(prepared)

    assert verdict.resolved, verdict.note
    assert verdict.status["tests/test_mini.py::test_float_sum"] == "failed"
    assert verdict.fail_to_pass["success"] == ["tests/test_mini.py::test_mul"]


def test_a_change_breaking_a_pass_to_pass_test_is_not_resolved(prepared, tmp_path):
    broken = MINI["mini.py"].replace("return a + b", "return a - b")
    merge(prepared, {"mini.py": broken}, tmp_path)

    verdict = judged(prepared)

    assert not verdict.resolved
    assert verdict.pass_to_pass["failure"] == ["tests/test_mini.py::test_add"]


def test_the_agents_edits_to_test_files_are_set_aside(prepared, tmp_path):
    # No mul, but a test_mul of the agent's own that passes without it.
    fake = "def test_mul():\n    assert True\n\n\ndef test_add():\n    assert True\n"
    merge(prepared, {"tests/test_mini.py": fake}, tmp_path)

    verdict = judged(prepared)

    assert not verdict.resolved
    assert "FAIL_TO_PASS not passing: tests/test_mini.py::test_mul" in verdict.note


def test_the_unchanged_base_is_not_resolved(prepared):
    verdict = judged(prepared)

    assert not verdict.resolved
    assert verdict.fail_to_pass["failure"] == ["tests/test_mini.py::test_mul"]
    # With the hidden tests its module imports mul: nothing of it runs.
    assert verdict.pass_to_pass["failure"] == ["tests/test_mini.py::test_add"]
