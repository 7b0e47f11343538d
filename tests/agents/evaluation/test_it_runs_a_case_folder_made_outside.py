"""`make eval EVAL_ARGS="--cases DIR"` runs a folder of cases made anywhere
(here: the test's temporary folder, a JavaScript project run by node's own
test runner), and writes results.json and results.md in its own state."""

from __future__ import annotations

import json

from tests.agents.evaluation.live import ROOT, js_case_folder, run


def test_a_folder_outside_the_repository_runs_with_cases(tmp_path):
    folder = js_case_folder(tmp_path / "my-suite")
    assert not folder.is_relative_to(ROOT)

    done = run(
        ["-m", "agents.evaluation", "--cases", str(folder), "--agent", "gold"],
        tmp_path / "var",
    )

    assert done.returncode == 0, done.stdout + done.stderr
    results = tmp_path / "var" / "eval" / "results.json"
    data = json.loads(results.read_text())
    (case,) = data["cases"]
    assert case["id"] == "js-mul" and case["language"] == "javascript"
    assert case["resolved"] is True, case["note"]
    assert (case["fail_to_pass"], case["pass_to_pass"]) == (1, 1)
    assert data["scripted"] is True and case["cost_kind"] == "simulated"
    assert "SCRIPTED" in (tmp_path / "var" / "eval" / "results.md").read_text()
    # Its own database, beside its results; none in the main state.
    assert (tmp_path / "var" / "eval" / "codex.sqlite3").exists()
    assert not (tmp_path / "var" / "codex.sqlite3").exists()
