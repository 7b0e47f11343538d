"""Spec 000's two scores, kept distinct:
productivity_score = (issues_closed * 10 + files_changed) / tool_count (0 when
tool_count = 0) and ProductivityMetrics score = (files_changed * 2 +
issues_closed * 5) / max(tool_count, 1)."""

from __future__ import annotations

import pytest

from codex.fleet.productivity import ProductivityMetrics, productivity_score
from tests.fleet.factories import make_run

pytestmark = pytest.mark.django_db


def test_the_specs_productivity_metrics_example_scores_0_24():
    metrics = ProductivityMetrics(
        tool_count=45, files_changed=3, issues_closed=1, response_length=15000
    )
    assert metrics.score == pytest.approx(11 / 45)
    assert round(metrics.score, 2) == 0.24
    assert metrics.warnings == []


def test_the_specs_session_outcome_example_scores_0_33():
    # issues_closed [42], files_changed 5, tool_count 45 -> 0.33
    assert (
        round(productivity_score(issues_closed=1, files_changed=5, tool_count=45), 2)
        == 0.33
    )


def test_the_two_formulas_differ_on_the_same_counts():
    run = make_run(tool_count=10, files_changed=4, closed=2)
    assert run.productivity_score == pytest.approx((2 * 10 + 4) / 10)  # 2.4
    assert run.metrics_score == pytest.approx((4 * 2 + 2 * 5) / 10)  # 1.8


def test_no_tool_calls():
    run = make_run(tool_count=0, files_changed=3, closed=1)
    assert run.productivity_score == 0  # "= 0 if tool_count = 0"
    assert run.metrics_score == 3 * 2 + 1 * 5  # divided by max(0, 1) = 1


def test_success_means_at_least_one_issue_closed():
    assert make_run(closed=1).success is True
    assert make_run(closed=0).success is False
