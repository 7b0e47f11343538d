"""QA's judgement of a check against the same check on the base commit, and
the checks' own time limit per repository."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from agents import check_runs
from agents.roles import qa
from agents.roles.qa import CheckRun, is_new_problem
from agents.sandbox import Sandbox


def junit(*failing):
    return {
        "tests_passed": 1,
        "tests_failed": len(failing),
        "tests_skipped": 0,
        "tests_total": 1 + len(failing),
        "failures": [{"name": name, "error": "x"} for name in failing],
    }


def failed_test(*names):
    return CheckRun("test", "pytest", exit_code=1, junit=junit(*names))


@pytest.mark.parametrize(
    "check, base, new",
    [
        (CheckRun("test", "pytest", exit_code=0), None, False),
        (failed_test("a"), None, True),  # unknown base: the change's
        (failed_test("a"), {"status": "passed", "failing": []}, True),
        (failed_test("a"), {"status": "failed", "failing": ["a", "b"]}, False),
        (failed_test("a", "c"), {"status": "failed", "failing": ["a"]}, True),
        # Fails on the base the same way without naming tests (environment).
        (CheckRun("lint", "ruff", exit_code=1), {"status": "failed"}, False),
        (
            CheckRun("lint", "ruff", timed_out=True),
            {"status": "failed", "failing": []},
            True,
        ),
    ],
)
def test_only_what_the_change_broke_is_new(check, base, new):
    assert is_new_problem(check, base) is new


def test_qa_keeps_approving_over_pre_existing_failures_only():
    context = SimpleNamespace(
        checks=[failed_test("test_old::test_bug")],
        extra={
            "baseline": {
                "sha": "a" * 40,
                "checks": {
                    "test": {"status": "failed", "failing": ["test_old::test_bug"]}
                },
            }
        },
    )
    submitted = {
        "acceptance_criteria": [
            {"criterion": "x", "status": "passed", "evidence": "test_new"}
        ],
        "recommendation": "approve",
        "summary": "ok",
    }
    result = qa.to_phase_result(submitted, context)
    assert result.verification["recommendation"] == "approve"
    assert result.verification["failures"][0]["pre_existing"] is True
    # Without the baseline the same run sends the change back.
    context.extra = {}
    again = qa.to_phase_result(submitted, context)
    assert again.verification["recommendation"] == "request_changes"


def test_the_checks_time_limit_is_the_repositorys(settings, worktree):
    settings.CODEX_CHECK_TIMEOUT_SECONDS = 600
    repository = SimpleNamespace(check_timeout_seconds=None)
    assert qa.check_timeout(repository) == 600
    repository.check_timeout_seconds = 1800
    assert qa.check_timeout(repository) == 1800
    sandbox = Sandbox(worktree)
    checking = check_runs._check_sandbox(sandbox, 1800)
    assert checking.jail.limits.wall_seconds == 1800
    assert sandbox.jail.limits.wall_seconds < 1800  # one-off commands keep theirs
