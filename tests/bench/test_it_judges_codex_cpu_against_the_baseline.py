"""The benchmark's CPU-per-task figure: Codex's workers and PostgreSQL per task
against the same figure of the code its goal was set on, measured in the same
run (goal: at most half); without that baseline it says why and falls back to
the absolute goal. bench/pipeline_baseline.py."""

from __future__ import annotations

import json

import pytest

from bench import pipeline_baseline
from bench.pipeline_baseline import (
    FIGURE,
    BaselineUnavailable,
    codex_cpu_figures,
    read_report,
)

QA = {"seen": 0.01, "actual": 0.2}


def run_at_8(workers: float, postgresql: float, children: float = 0.26) -> dict:
    split = {"workers": workers, "postgresql": postgresql, "git_and_pytest": children}
    return {"workers": 8, "tasks": 32, "cpu_split": split}


def baseline_run(workers: float, postgresql: float, git: float = 0.27) -> dict:
    return {
        "workers": workers,
        "postgresql": postgresql,
        "git": git,
        "own": workers + postgresql,
    }


def test_the_figure_is_this_codes_mean_over_the_baselines_mean():
    current = [run_at_8(0.25, 0.09), run_at_8(0.27, 0.09)]
    baseline = [baseline_run(0.52, 0.12), baseline_run(0.48, 0.12)]
    own, git = codex_cpu_figures(current, baseline, QA, rev="973d989" + "0" * 33)
    assert own["name"] == FIGURE
    assert own["value"] == pytest.approx(0.35)
    assert own["ceiling"] == pytest.approx(0.62)
    assert own["ratio"] == pytest.approx(0.35 / 0.62, abs=1e-4)
    assert own["meets_goal"] is False  # 0.56 > 0.5
    assert own["git"] == pytest.approx(0.25)  # the children less the QA run seen
    assert git["value"] == pytest.approx(0.25)
    assert git["ceiling"] == pytest.approx(0.27)


def test_half_of_the_baseline_meets_the_goal_only_with_the_tests_told_apart():
    current = [run_at_8(0.22, 0.08)]
    baseline = [baseline_run(0.50, 0.12)]
    [own, _] = codex_cpu_figures(current, baseline, QA, rev="973d989")
    assert own["ratio"] <= 0.5 and own["meets_goal"] is True
    [own, _] = codex_cpu_figures(current, baseline, None, rev="973d989")
    assert own["meets_goal"] is False


def test_without_a_baseline_it_says_why_and_judges_the_absolute_goal():
    [own] = codex_cpu_figures(
        [run_at_8(0.15, 0.05)], [], QA, rev=None, missing="commit x is not here"
    )
    assert own["ceiling"] is None
    assert "no baseline: commit x is not here" in own["notes"]
    assert own["meets_goal"] is True  # 0.20 <= 0.225
    [own] = codex_cpu_figures([run_at_8(0.20, 0.05)], [], QA, rev=None)
    assert own["meets_goal"] is False
    assert "no baseline: turned off" in own["notes"]


def test_the_baselines_split_is_read_from_its_report(tmp_path):
    report = tmp_path / "report.json"
    log = tmp_path / "baseline.log"
    log.write_text("Traceback: it failed\n")
    with pytest.raises(BaselineUnavailable, match="exited 1: Traceback"):
        read_report(report, 1, log)
    report.write_text(json.dumps({"figures": [{"name": FIGURE, "value": None}]}))
    with pytest.raises(BaselineUnavailable, match="no pipeline_codex_cpu"):
        read_report(report, 0, log)
    row = {"name": FIGURE, "workers": 0.5, "postgresql": 0.12, "git": 0.27}
    report.write_text(json.dumps({"figures": [row]}))
    split = read_report(report, 0, log)
    assert split == {
        "workers": 0.5,
        "postgresql": 0.12,
        "git": 0.27,
        "own": pytest.approx(0.62),
    }


def test_a_commit_missing_from_the_clone_is_unavailable_not_an_error(tmp_path):
    with (
        pytest.raises(BaselineUnavailable, match="not in this clone"),
        pipeline_baseline.worktree("0" * 40, tmp_path / "src"),
    ):
        pass
    assert not (tmp_path / "src").exists()


@pytest.mark.parametrize("value", ["none", "off", " "])
def test_the_baseline_can_be_turned_off(monkeypatch, value):
    monkeypatch.setenv("CODEX_BENCH_BASELINE", value)
    assert pipeline_baseline.commit() is None
    monkeypatch.delenv("CODEX_BENCH_BASELINE")
    assert pipeline_baseline.commit() == pipeline_baseline.BASELINE_COMMIT
