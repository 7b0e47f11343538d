"""Issue 4: a phase's classified failure is acted on by its action (spec 000):
wait_retry → blocked until the server's retry-after (or capped backoff with
jitter) and then resumed; rotate_token → the next credential; pull_retry →
retried; manual_review → escalated; abort → failed. Each error is kept in the
envelope's error list with its resolution."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import time_machine

from codex.configuration.credentials import current_credential
from codex.core.errors import Action, ClassifiedFailure, make_error
from codex.tasks.jobs import advance_task, resume_due_tasks
from codex.tasks.pipeline import retry_delay
from tests.factories import make_task

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)


class FailingRunner:
    """Raises the failure queued in `failures` (then behaves)."""

    failures: list[ClassifiedFailure] = []

    def run(self, task):
        from tests.phase_runner import default_result

        if FailingRunner.failures:
            raise FailingRunner.failures.pop(0)
        return default_result(task)


@pytest.fixture
def failing(settings):
    settings.CODEX_PHASE_RUNNER = "tests.pipeline.test_error_actions.FailingRunner"
    FailingRunner.failures = []
    return FailingRunner.failures


def failure(action: Action, *, retry_after: int | None = None, source="claude"):
    return ClassifiedFailure(
        make_error(source, 429, action, "trouble", retry_after=retry_after)
    )


def test_wait_retry_honours_the_servers_retry_after(failing):
    failing.append(failure(Action.WAIT_RETRY, retry_after=42))
    task = make_task()
    with time_machine.travel(NOW, tick=False):
        assert advance_task(task.task_id) == "blocked/intake"
        task.refresh_from_db()
        assert task.blocked_until == NOW + timedelta(seconds=42)
        assert task.errors[-1]["code"] == "wait_retry"
        assert "blocked until 2026-11-22 12:00:42" in task.errors[-1]["resolution"]
        assert resume_due_tasks() == 0  # not yet
    with time_machine.travel(NOW + timedelta(seconds=41), tick=False):
        assert resume_due_tasks() == 0
    with time_machine.travel(NOW + timedelta(seconds=42), tick=False):
        assert resume_due_tasks() == 1
    task.refresh_from_db()
    assert task.status == "in_progress"
    assert task.events.filter(actor="system:scheduler", target="in_progress").exists()


def test_wait_retry_without_retry_after_backs_off_with_capped_jitter(failing, settings):
    settings.CODEX_RETRY_BACKOFF_BASE_SECONDS = 30
    settings.CODEX_RETRY_BACKOFF_MAX_SECONDS = 600
    for attempt, ceiling in [(0, 30), (1, 60), (3, 240), (10, 600)]:
        delays = {retry_delay(attempt).total_seconds() for _ in range(50)}
        assert all(ceiling / 2 <= delay <= ceiling for delay in delays), attempt
        assert len(delays) > 1, "jitter spreads the retries"
    failing.append(failure(Action.WAIT_RETRY))
    task = make_task()
    with time_machine.travel(NOW, tick=False):
        advance_task(task.task_id)
        task.refresh_from_db()
        assert NOW + timedelta(seconds=15) <= task.blocked_until
        assert task.blocked_until <= NOW + timedelta(seconds=30)


def test_rotate_token_moves_to_the_next_credential_and_retries(failing, settings):
    settings.CODEX_CREDENTIALS = {"claude": ["key-one", "key-two"], "github": []}
    failing.append(failure(Action.ROTATE_TOKEN))
    task = make_task()
    assert current_credential("claude") == "key-one"
    assert advance_task(task.task_id) == "in_progress/intake"
    assert current_credential("claude") == "key-two"
    task.refresh_from_db()
    assert task.errors[-1]["resolution"] == "retrying with the next credential"
    assert task.retry_count == 1
    assert advance_task(task.task_id) == "in_progress/planning"


def test_rotate_token_with_one_credential_escalates(failing, settings):
    settings.CODEX_CREDENTIALS = {"claude": ["only-key"], "github": []}
    failing.append(failure(Action.ROTATE_TOKEN))
    task = make_task()
    assert advance_task(task.task_id) == "escalated/intake"
    escalation = task.escalations.get()
    assert escalation.reason == "manual_review"
    assert "no other claude credential" in escalation.detail
    assert current_credential("claude") == "only-key"


def test_a_refused_github_app_token_gets_one_fresh_token_then_escalates(
    failing, settings
):
    # A GitHub App has no list of tokens to rotate through: the client mints a
    # new installation token, worth one retry, even with no tokens configured.
    settings.GITHUB_APP_ID = "123"
    settings.GITHUB_APP_PRIVATE_KEY = "pem"
    settings.GITHUB_APP_INSTALLATION_ID = "456"
    settings.CODEX_CREDENTIALS = {"claude": ["key"], "github": []}
    failing.extend(failure(Action.ROTATE_TOKEN, source="github") for _ in range(2))
    task = make_task()
    assert advance_task(task.task_id) == "in_progress/intake"
    assert advance_task(task.task_id) == "escalated/intake"
    detail = task.escalations.get().detail
    assert "a new GitHub App installation token was refused too" in detail


def test_a_refused_github_token_without_an_app_and_no_other_escalates(
    failing, settings
):
    settings.GITHUB_APP_ID = "123"
    settings.GITHUB_APP_PRIVATE_KEY = ""  # not all three: no app
    settings.GITHUB_APP_INSTALLATION_ID = "456"
    settings.CODEX_CREDENTIALS = {"claude": ["key"], "github": ["only-token"]}
    failing.append(failure(Action.ROTATE_TOKEN, source="github"))
    task = make_task()
    assert advance_task(task.task_id) == "escalated/intake"
    assert "no other github credential" in task.escalations.get().detail


def test_pull_retry_retries_until_the_limit_then_escalates(failing, settings):
    settings.CODEX_MAX_RETRIES = 2
    failing.extend(failure(Action.PULL_RETRY, source="git") for _ in range(3))
    task = make_task()
    assert advance_task(task.task_id) == "in_progress/intake"
    assert advance_task(task.task_id) == "in_progress/intake"
    assert advance_task(task.task_id) == "escalated/intake"
    task.refresh_from_db()
    assert task.escalations.get().reason == "retry_limit"
    assert task.phase_progress["intake"]["retries"] == 2


def test_manual_review_escalates_with_the_reason(failing):
    failing.append(failure(Action.MANUAL_REVIEW))
    task = make_task()
    assert advance_task(task.task_id) == "escalated/intake"
    assert "trouble" in task.escalations.get().detail


def test_abort_fails_the_task(failing):
    failing.append(failure(Action.ABORT))
    task = make_task()
    assert advance_task(task.task_id) == "failed/intake"
    task.refresh_from_db()
    assert task.errors[-1]["resolution"] == "failed"
    assert task.finished_at is not None
