"""Spec 000's health rules and warning texts, at and around each threshold:
- "warning" if productivity_score < 0.1 and tool_count > 30 (SessionOutcome);
- tool_count >= 30 and files_changed == 0:
  "Low productivity: N tool calls but 0 files changed";
- tool_count >= 30 and score < 0.1: "Productivity score X below threshold 0.1".
"""

from __future__ import annotations

import itertools

import pytest

from codex.fleet.models import AgentRun, RunStatus
from codex.fleet.productivity import ProductivityMetrics
from tests.fleet.factories import make_run

pytestmark = pytest.mark.django_db


def metrics(tools, files, closed=0):
    return ProductivityMetrics(
        tool_count=tools, files_changed=files, issues_closed=closed
    )


@pytest.mark.parametrize(("tools", "warned"), [(29, False), (30, True), (31, True)])
def test_low_productivity_warning_from_30_tool_calls_with_0_files(tools, warned):
    expected = f"Low productivity: {tools} tool calls but 0 files changed"
    assert (expected in metrics(tools, 0, closed=1).warnings) is warned


@pytest.mark.parametrize(
    ("tools", "files", "warned"),
    [
        (29, 1, False),  # score 0.069 but fewer than 30 tool calls
        (30, 1, True),  # score 2/30 = 0.067 < 0.1
        (40, 2, False),  # score 4/40 = 0.1 exactly: not below
        (41, 2, True),  # score 4/41 = 0.0976
    ],
)
def test_score_warning_below_0_1_from_30_tool_calls(tools, files, warned):
    found = [w for w in metrics(tools, files).warnings if w.startswith("Productivity")]
    assert bool(found) is warned
    if warned:
        score = files * 2 / tools
        assert found == [f"Productivity score {score:.3f} below threshold 0.1"]


def test_warning_texts_word_for_word():
    assert metrics(45, 0).warnings == [
        "Low productivity: 45 tool calls but 0 files changed",
        "Productivity score 0.000 below threshold 0.1",
    ]


@pytest.mark.parametrize(
    ("tools", "files", "outcome_warning"),
    [
        (30, 2, False),  # productivity 2/30 < 0.1 but tool_count is not > 30
        (31, 3, True),  # 3/31 = 0.097 < 0.1 and 31 > 30
        (40, 4, False),  # 4/40 = 0.1: not below
        (41, 4, True),  # 4/41 = 0.0976
    ],
)
def test_session_outcome_rule_productivity_below_0_1_above_30_tools(
    tools, files, outcome_warning
):
    assert metrics(tools, files).outcome_warning is outcome_warning


def test_the_session_outcome_rule_alone_makes_a_warning():
    # 31 tools, 3 files: productivity 3/31 < 0.1; metrics score 6/31 = 0.19.
    m = metrics(31, 3)
    assert m.warnings == [] and m.outcome_warning
    assert m.health_status() == "warning"


def test_health_status_values():
    assert metrics(45, 3, closed=1).health_status() == "healthy"
    assert metrics(30, 0).health_status() == "warning"
    assert metrics(45, 3, closed=1).health_status(failed=True) == "unhealthy"
    assert make_run(
        status=RunStatus.FAILED, tool_count=45, files_changed=3
    ).health_status == ("unhealthy")


def test_the_databases_health_agrees_with_python_around_every_threshold():
    grid = itertools.product([0, 29, 30, 31, 40, 41, 50], [0, 1, 2, 3, 4, 5], [0, 1])
    runs = [make_run(tool_count=t, files_changed=f, closed=c) for t, f, c in grid]
    runs.append(make_run(status=RunStatus.FAILED))
    in_sql = dict(AgentRun.objects.with_health().values_list("pk", "health"))
    assert {run.pk: run.health_status for run in runs} == in_sql
    assert set(in_sql.values()) == {"healthy", "warning", "unhealthy"}
