"""`make eval` against the scripted agents: a Python and a JavaScript request
go through the whole pipeline, are judged by their hidden tests, and the
table and JSON say so (the harness, checked without a model)."""

from __future__ import annotations

import json

import pytest

from agents.evaluation import runner
from agents.evaluation.suite import CASES, REPOSITORIES

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_suite_has_ten_requests_in_two_languages():
    assert len(CASES) >= 10
    assert {REPOSITORIES[c.repository].language for c in CASES} >= {
        "python",
        "javascript",
    }
    for case in CASES:
        # The hidden tests are not part of what the agents are given.
        assert not set(case.hidden_tests) & set(case.solution)
        assert not set(case.hidden_tests) & set(REPOSITORIES[case.repository].files)


def test_scripted_requests_are_resolved_and_reported(tmp_path):
    results = runner.run_suite(
        tmp_path / "work", scripted=True, only=["py-clamp", "js-slugify"], out=print
    )

    assert [r.id for r in results] == ["py-clamp", "js-slugify"]
    for result in results:
        assert result.resolved, result
        assert result.status == "completed/release"
        assert result.turns >= 7 and result.tokens > 0 and result.cost_usd > 0
    path = runner.write_report(results, tmp_path / "out", mode="scripted")
    data = json.loads(path.read_text())
    assert data["totals"]["resolved"] == 2 and data["mode"] == "scripted"
    assert "| total | | 2/2 |" in (tmp_path / "out" / "results.md").read_text()


def test_a_wrong_change_is_not_resolved(tmp_path, monkeypatch):
    case = next(c for c in CASES if c.id == "py-mul")
    wrong = dict(case.solution)
    wrong["mathkit.py"] = wrong["mathkit.py"].replace("a * b", "a * b if a > 0 else 0")
    broken = type(case)(**{**case.__dict__, "solution": wrong})
    monkeypatch.setattr(runner, "CASES", [broken])

    (result,) = runner.run_suite(tmp_path / "work", scripted=True, out=print)

    assert result.status == "completed/release"  # its own test passed
    assert not result.resolved  # the hidden test of mul(-2, 3) did not
    assert "hidden tests failed" in result.note
