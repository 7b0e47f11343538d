"""results.json and results.md: each case's project, language, list sizes,
outcome, turns, seconds and cost (simulated for scripted agents, never shown
as money spent), and the resolved rate with its 95 % interval."""

from __future__ import annotations

import json

import pytest

from agents.evaluation.results import CaseResult, summary, wilson, write_report


def row(case: str, run: int, resolved: bool, **fields) -> CaseResult:
    values = {
        "id": case,
        "project": "toolz",
        "language": "python",
        "run": run,
        "agent": "gold",
        "resolved": resolved,
        "status": "completed/release",
        "judged": True,
        "fail_to_pass": 2,
        "pass_to_pass": 10,
        "fail_to_pass_passed": 2 if resolved else 0,
        "pass_to_pass_failed": 0,
        "cycles": 0,
        "turns": 8,
        "tokens": 1000,
        "cost_usd": 0.25,
        "cost_kind": "simulated",
        "seconds": 3.0,
    }
    return CaseResult(**{**values, **fields})


def test_the_json_names_what_each_case_was_and_did(tmp_path):
    results = [row("a", 1, True), row("b", 1, False, language="javascript")]

    path = write_report(results, tmp_path, agent="gold", suite="real")

    data = json.loads(path.read_text())
    assert data["agent"] == "gold" and data["scripted"] is True
    first = data["cases"][0]
    for key in (
        "project",
        "language",
        "fail_to_pass",
        "pass_to_pass",
        "resolved",
        "cost_usd",
        "cost_kind",
        "turns",
        "seconds",
    ):
        assert key in first
    assert data["summary"]["resolved"] == 1 and data["summary"]["cases"] == 2
    assert data["summary"]["languages"] == ["javascript", "python"]


def test_scripted_costs_are_labelled_simulated(tmp_path):
    write_report([row("a", 1, True)], tmp_path, agent="gold", suite="real")

    table = (tmp_path / "results.md").read_text()
    assert "SCRIPTED: no model was called" in table
    assert "simulated cost $ (not spent)" in table
    assert "Nothing was spent." in table


def test_real_costs_are_not_called_simulated(tmp_path):
    write_report(
        [row("a", 1, True, cost_kind="real", agent="model")],
        tmp_path,
        agent="model",
        suite="real",
    )

    table = (tmp_path / "results.md").read_text()
    assert "simulated" not in table and "| cost $ |" in table


def test_repeats_give_the_mean_and_a_t_interval():
    results = [
        row(case, run, resolved)
        for run, outcomes in ((1, (True, True)), (2, (True, False)), (3, (True, True)))
        for case, resolved in zip(("a", "b"), outcomes, strict=True)
    ]

    total = summary(results)

    assert total["runs"] == 3 and total["run_rates"] == [1.0, 0.5, 1.0]
    assert total["resolved_rate"] == pytest.approx(0.8333, abs=1e-4)
    # mean 0.833, sd 0.289, t(2) 4.303: the half width is 0.717
    assert total["interval_95"] == [pytest.approx(0.1162, abs=1e-3), 1.0]
    assert "Student's t over 3 runs" in total["interval_method"]


def test_one_run_gives_wilsons_interval_over_the_cases():
    total = summary([row("a", 1, True), row("b", 1, False)])

    assert total["interval_95"] == [round(v, 4) for v in wilson(1, 2)]
    low, high = wilson(20, 20)
    assert high == 1.0 and low == pytest.approx(0.8389, abs=1e-3)
