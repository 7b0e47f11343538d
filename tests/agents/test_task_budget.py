"""A task's budget over all its agent runs: a run starts with what is left,
and a task with nothing left escalates instead of starting one."""

from __future__ import annotations

from decimal import Decimal

import pytest

from agents.budgets import Budget, TaskBudget
from agents.phase_runner import AgentPhaseRunner
from agents.runtime import Kind
from codex.fleet.models import AgentRun
from codex.tasks.jobs import advance_task
from tests.agents.test_runtime import GOOD, run
from tests.factories import make_task
from tests.model_stub import message, submit, tool_use

pytestmark = pytest.mark.django_db

EXPENSIVE = {"input_tokens": 100_000, "output_tokens": 10_000}  # $0.45 a turn


def spend(task, cost: str, tokens: int = 0) -> AgentRun:
    """A finished earlier run of `task` that cost `cost`."""
    run = AgentRun.objects.begin(
        by="test", session_id=f"{task.task_id}:earlier:{cost}:{tokens}", task=task
    )
    run.cost_usd = Decimal(cost)
    run.input_tokens = tokens
    run.save(update_fields=["cost_usd", "input_tokens"])
    run.perform("succeed", by="test")
    return run


def test_the_task_budget_sums_the_tasks_runs(settings):
    settings.CODEX_TASK_MAX_COST_USD = "5"
    settings.CODEX_TASK_MAX_TOKENS = 0
    task = make_task()
    spend(task, "1.25", tokens=1000)
    spend(task, "2.50", tokens=500)
    spend(make_task(), "9.00")  # another task's run does not count

    budget = TaskBudget.of(task)

    assert budget.spent_cost_usd == Decimal("3.75")
    assert budget.spent_tokens == 1500
    assert budget.runs == 2
    assert budget.max_tokens is None  # 0: no cap
    assert budget.exhausted() == ""
    applied = budget.apply(Budget(max_cost_usd=Decimal("10")))
    assert applied.cost_cap == Decimal("1.25")
    assert applied.token_cap == applied.max_tokens

    spend(task, "1.25")
    reason = TaskBudget.of(task).exhausted()
    assert reason.startswith(
        "task cost budget exhausted ($5.00 of $5.00 spent over 3 runs"
    )
    assert "CODEX_TASK_MAX_COST_USD" in reason


def test_a_run_stops_where_the_task_budget_ends(stub, client, worktree):
    stub.add(
        message(tool_use("list_files", {}), usage=EXPENSIVE),
        message(tool_use("list_files", {}), usage=EXPENSIVE),
        submit(GOOD),
    )
    task_budget = TaskBudget(
        max_cost_usd=Decimal("2"), max_tokens=None, spent_cost_usd=Decimal("1.60")
    )

    outcome = run(
        client, worktree, budget=task_budget.apply(Budget(max_cost_usd=Decimal("10")))
    )

    # $0.40 was left: the first $0.45 turn used it up.
    assert outcome.kind == Kind.BUDGET_EXHAUSTED
    assert len(stub.requests) == 1
    assert outcome.reason.startswith(
        "task cost budget exhausted ($2.05 of $2.00 spent by the task's runs"
    )
    assert outcome.phase_result().outcome == "escalate"


def test_a_task_token_cap_is_named_as_the_tasks(stub, client, worktree):
    stub.add(message(tool_use("list_files", {}), usage={"input_tokens": 700}))
    task_budget = TaskBudget(max_cost_usd=None, max_tokens=1000, spent_tokens=400)

    outcome = run(client, worktree, budget=task_budget.apply(Budget()))

    assert outcome.reason.startswith("task token budget exhausted (1100 of 1000")


def test_an_exhausted_task_escalates_without_calling_the_model(
    settings, stub, transactional_db
):
    settings.CODEX_PHASE_RUNNER = "agents.phase_runner.AgentPhaseRunner"
    settings.ANTHROPIC_BASE_URL = stub.url
    settings.CODEX_CREDENTIALS = {"claude": ["test-key"], "github": []}
    settings.CODEX_TASK_MAX_COST_USD = "3"
    task = make_task()
    spend(task, "3.10")

    assert advance_task(task.task_id) == "escalated/intake"

    task.refresh_from_db()
    assert stub.requests == []
    escalation = task.escalations.get()
    assert escalation.detail.startswith("task cost budget exhausted ($3.10 of $3.00")
    assert escalation.reason == "manual_review"


def test_the_runner_hands_the_agent_what_is_left(settings, monkeypatch):
    settings.CODEX_TASK_MAX_COST_USD = "4"
    settings.CODEX_AGENT_MAX_COST_USD = "10"
    task = make_task()
    spend(task, "3.00")
    seen = {}

    def fake_run_agent(client, **kwargs):
        seen["budget"] = kwargs["budget"]
        raise RuntimeError("stop here")

    monkeypatch.setattr("agents.phase_runner.run_agent", fake_run_agent)
    monkeypatch.setattr(
        "agents.phase_runner.prepare_worktree", lambda task, forge, branch: "/tmp"
    )
    # /tmp is no repository: nothing to detect or set up there.
    monkeypatch.setattr(
        "agents.phase_runner.prepare_environment", lambda repository, jail: (jail, "")
    )
    with pytest.raises(RuntimeError, match="stop here"):
        AgentPhaseRunner()._run(task, _intake_role(), client=None)

    assert seen["budget"].cost_cap == Decimal("1.00")


def _intake_role():
    from agents.roles import role_for

    return role_for("intake")
