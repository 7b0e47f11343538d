"""Transient model errors are retried inside the conversation, boundedly.

Before, any 429/529/5xx or lost connection ended the agent's run, and the
worker requeued the whole phase: under a sustained 30 % error rate a phase of
n turns got through with probability 0.7^n per attempt, and the task's retry
limit escalated it. Now the runtime sends the same request again after the
server's retry-after (or a capped, jittered backoff), up to
Budget.model_retries times per run; a retry-after longer than
model_retry_max_wait still ends the run, so no worker sleeps as long as the
API asks.
"""

from __future__ import annotations

from agents.budgets import Budget
from agents.runtime import Kind
from codex.core.errors import Action
from tests.agents.test_runtime import GOOD, run
from tests.model_stub import dropped, error, message, submit, tool_use


def test_a_rate_limit_is_waited_out_in_place_and_the_conversation_goes_on(
    stub, client, worktree
):
    stub.add(
        message(tool_use("list_files", {})),
        error(429, retry_after=3),
        submit(GOOD),
    )
    waits: list[float] = []
    outcome = run(client, worktree, sleep=waits.append)

    assert outcome.kind == Kind.SUBMITTED and outcome.result == GOOD
    assert len(waits) == 1
    assert 3 <= waits[0] <= 3.6  # never before retry-after, a little after
    # The retried request is the same conversation, not a fresh start.
    assert stub.bodies[2]["messages"] == stub.bodies[1]["messages"]
    assert len(stub.bodies[2]["messages"]) == 3
    assert outcome.metrics.turns == 2  # a failed call is not a turn


def test_overload_server_error_and_a_dropped_connection_back_off_in_place(
    stub, client, worktree
):
    stub.add(error(529), error(500), dropped(), submit(GOOD))
    waits: list[float] = []
    budget = Budget(model_retry_base_wait=1.0, model_retry_max_wait=3.0)
    outcome = run(client, worktree, budget, sleep=waits.append)

    assert outcome.kind == Kind.SUBMITTED
    assert len(stub.requests) == 4
    # Doubling (1, 2, 4 capped at 3), each drawn from its upper half.
    assert 0.5 <= waits[0] <= 1 and 1 <= waits[1] <= 2 and 1.5 <= waits[2] <= 3


def test_a_retry_after_longer_than_a_worker_waits_requeues_the_step(
    stub, client, worktree
):
    stub.add(error(429, retry_after=31))
    waits: list[float] = []
    outcome = run(client, worktree, sleep=waits.append)

    assert waits == []
    assert outcome.kind == Kind.ERROR
    assert outcome.error.action is Action.WAIT_RETRY
    assert outcome.error.retry_after == 31
    assert len(stub.requests) == 1


def test_in_place_retries_are_bounded_per_run(stub, client, worktree):
    stub.add(*[error(529) for _ in range(5)], submit(GOOD))
    waits: list[float] = []
    outcome = run(client, worktree, Budget(model_retries=3), sleep=waits.append)

    # One request, three retries, then the run ends and the step is requeued.
    assert len(stub.requests) == 4
    assert len(waits) == 3
    assert outcome.kind == Kind.ERROR
    assert outcome.error.action is Action.WAIT_RETRY


def test_errors_that_are_not_transient_are_not_retried(stub, client, worktree):
    stub.add(error(401), submit(GOOD))
    waits: list[float] = []
    outcome = run(client, worktree, sleep=waits.append)

    assert outcome.error.action is Action.ROTATE_TOKEN
    assert waits == [] and len(stub.requests) == 1


def test_the_backoff_starts_over_after_a_success(stub, client, worktree):
    stub.add(
        error(500),
        message(tool_use("list_files", {})),
        error(500),
        submit(GOOD),
    )
    waits: list[float] = []
    budget = Budget(model_retry_base_wait=1.0, model_retry_max_wait=8.0)
    outcome = run(client, worktree, budget, sleep=waits.append)

    assert outcome.kind == Kind.SUBMITTED
    assert len(waits) == 2 and all(0.5 <= wait <= 1 for wait in waits)


def test_settings_set_the_in_place_retry_budget(settings):
    settings.CODEX_MODEL_INLINE_RETRIES = 2
    settings.CODEX_MODEL_INLINE_WAIT_SECONDS = 5
    budget = Budget.from_settings()
    assert (budget.model_retries, budget.model_retry_max_wait) == (2, 5)


def test_a_runs_time_is_its_own_budget_not_the_job_timeout(settings):
    """The heartbeat keeps the task's lease while a run works: its time is
    bounded by its own budget, and the job timeout is a safety net above."""
    settings.Q_TIMEOUT = 900
    settings.CODEX_AGENT_MAX_SECONDS = 1800
    assert Budget.from_settings().max_seconds == 1800
