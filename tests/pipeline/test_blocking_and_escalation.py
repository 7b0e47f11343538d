"""Transient failures block (with a backoff), too many escalate, hard ones fail."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django_fsm import TransitionNotAllowed

from codex.tasks.jobs import advance_task
from codex.tasks.models import Escalation
from codex.tasks.runners import NO_BACKEND_REASON, PhaseResult
from tests.factories import make_task
from tests.pipeline.helpers import run_steps, transitions

NOW = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)


@pytest.mark.django_db
def test_without_an_agent_backend_a_new_task_blocks_with_a_visible_reason():
    task = make_task()

    results = run_steps(task)

    assert results == ["blocked/intake"]
    assert task.status == "blocked"
    assert task.phase == "intake"
    assert task.blocked_reason == NO_BACKEND_REASON == "no agent backend configured"
    assert task.blocked_until is None
    assert task.retry_count == 1
    [error] = task.errors
    assert error["message"] == NO_BACKEND_REASON
    assert error["phase"] == "intake"
    assert error["code"] == "wait_retry"
    assert task.lease_holder is None
    assert transitions(task, "status") == [
        ("pending", "in_progress"),
        ("in_progress", "blocked"),
    ]
    assert task.events.filter(kind="error", reason=NO_BACKEND_REASON).count() == 1
    assert not Escalation.objects.filter(task=task).exists()


@pytest.mark.django_db
def test_a_retry_after_sets_blocked_until(scripted_runner, time_machine):
    time_machine.move_to(NOW, tick=False)
    scripted_runner.queue(
        "intake", PhaseResult.blocked("rate limited", retry_after=timedelta(seconds=30))
    )
    task = make_task()

    assert advance_task(task.task_id) == "blocked/intake"

    task.refresh_from_db()
    assert task.blocked_until == NOW + timedelta(seconds=30)
    assert task.blocked_reason == "rate limited"
    event = task.events.in_order().filter(kind="transition").last()
    assert event.data["retry_after_seconds"] == 30

    # The backoff must elapse before the task may be unblocked.
    time_machine.move_to(NOW + timedelta(seconds=29), tick=False)
    with pytest.raises(TransitionNotAllowed):
        task.perform("unblock", by="op")
    task.refresh_from_db()
    assert task.status == "blocked"

    time_machine.move_to(NOW + timedelta(seconds=30), tick=False)
    task.perform("unblock", by="op")
    task.refresh_from_db()
    assert task.status == "in_progress"
    assert task.blocked_until is None
    assert task.blocked_reason == ""

    assert run_steps(task)[-1] == "completed/release"


@pytest.mark.django_db
def test_past_the_retry_limit_a_transient_failure_escalates(settings):
    settings.CODEX_MAX_RETRIES = 2
    task = make_task()

    assert advance_task(task.task_id) == "blocked/intake"
    task.refresh_from_db()
    assert task.retry_count == 1
    task.perform("unblock", by="op")
    assert advance_task(task.task_id) == "blocked/intake"
    task.refresh_from_db()
    assert task.retry_count == 2
    task.perform("unblock", by="op")

    assert advance_task(task.task_id) == "escalated/intake"

    task.refresh_from_db()
    assert task.status == "escalated"
    assert task.phase == "intake"
    assert len(task.errors) == 3
    escalation = Escalation.objects.get(task=task)
    assert escalation.reason == "retry_limit"
    assert escalation.phase == "intake"
    assert NO_BACKEND_REASON in escalation.detail
    assert [target for _, target in transitions(task, "status")] == [
        "in_progress",
        "blocked",
        "in_progress",
        "blocked",
        "in_progress",
        "escalated",
    ]


@pytest.mark.django_db
def test_a_new_phase_starts_with_a_fresh_retry_budget(scripted_runner, settings):
    settings.CODEX_MAX_RETRIES = 1
    scripted_runner.queue("intake", PhaseResult.blocked("flaky"))
    scripted_runner.queue("planning", PhaseResult.blocked("flaky"))
    task = make_task()

    assert advance_task(task.task_id) == "blocked/intake"
    task.refresh_from_db()
    task.perform("unblock", by="op")
    assert advance_task(task.task_id) == "in_progress/planning"

    assert advance_task(task.task_id) == "blocked/planning"


@pytest.mark.django_db
def test_an_unrecoverable_error_fails_the_task(scripted_runner, time_machine):
    time_machine.move_to(NOW, tick=False)
    scripted_runner.queue("planning", PhaseResult.failed("boom"))
    task = make_task()

    results = run_steps(task)

    assert results == ["in_progress/planning", "failed/planning"]
    assert task.status == "failed"
    assert task.phase == "planning"
    assert task.finished_at == NOW
    assert task.current_agent == "none"
    assert task.lease_holder is None
    [error] = task.errors
    assert (error["message"], error["code"], error["phase"]) == (
        "boom",
        "abort",
        "planning",
    )
    assert transitions(task, "status")[-1] == ("in_progress", "failed")
    assert advance_task(task.task_id) == "skipped: failed"


@pytest.mark.django_db
def test_a_runner_escalation_records_its_code_and_questions(scripted_runner):
    scripted_runner.queue(
        "implementation",
        PhaseResult.escalate(
            "secret committed", questions=["Rotate the key?"], code="security"
        ),
    )
    task = make_task()

    results = run_steps(task)

    assert results[-1] == "escalated/implementation"
    escalation = Escalation.objects.get(task=task)
    assert (escalation.reason, escalation.detail, escalation.questions) == (
        "security",
        "secret committed",
        ["Rotate the key?"],
    )


@pytest.mark.django_db
def test_an_unmerged_pull_request_blocks_the_release(scripted_runner):
    scripted_runner.queue("release", PhaseResult(merged=False))
    task = make_task()

    results = run_steps(task)

    assert results[-1] == "blocked/release"
    assert task.blocked_reason == "pull request not merged yet"
    assert task.finished_at is None
