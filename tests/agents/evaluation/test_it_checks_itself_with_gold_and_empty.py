"""The harness checks itself: the reference patch driven through the whole
pipeline (gold) is resolved; no change (empty) never is, and the judge finds
the unchanged main unresolved too."""

from __future__ import annotations

import pytest

from agents.evaluation.cases import load_suite
from agents.evaluation.runner import run_suite
from codex.tasks.models import Task

pytestmark = pytest.mark.django_db(transaction=True)


def test_gold_goes_through_every_phase_and_is_resolved(
    mini_suite, venv_toolchain, tmp_path
):
    (result,) = run_suite(
        load_suite(mini_suite),
        agent="gold",
        root=tmp_path / "work",
        cache=tmp_path / "cache",
        out=print,
    )

    assert result.resolved, result.note
    assert result.status == "completed/release"
    assert (result.fail_to_pass_passed, result.fail_to_pass) == (1, 1)
    assert (result.pass_to_pass_failed, result.pass_to_pass) == (0, 1)
    assert result.cost_kind == "simulated" and result.turns >= 7
    task = Task.objects.get()
    assert task.pr_merged
    phases = set(task.events.filter(field="phase").values_list("target", flat=True))
    assert {"planning", "implementation", "verification", "review", "release"} <= (
        phases
    )
    # The developer wrote the file with its own tool, as a model would.
    tools = list(task.events.filter(kind="tool").values_list("data__tool", flat=True))
    assert "write_file" in tools


def test_empty_changes_nothing_and_is_not_resolved(
    mini_suite, venv_toolchain, tmp_path
):
    (result,) = run_suite(
        load_suite(mini_suite),
        agent="empty",
        root=tmp_path / "work",
        cache=tmp_path / "cache",
        out=print,
    )

    assert not result.resolved
    assert result.status == "escalated/implementation"
    assert "without changing any file" in result.note
    # main as it was: judged, and its FAIL_TO_PASS test fails.
    assert result.judged and result.fail_to_pass_passed == 0
    assert "CASE BROKEN" not in result.note
