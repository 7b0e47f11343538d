"""A value saved in the database changes what Codex does at its next decision,
with no settings patch and no restart (spec 004 "Database-Stored Configuration":
"Review limits stored in `user_config` table for flexible policy management")."""

from __future__ import annotations

import pytest
import responses

from codex.configuration.credentials import current_credential
from codex.configuration.models import Setting
from codex.fleet.reviews import ReviewLimitReached, spawn_review
from codex.tasks.models import guards
from tests.configuration.factories import KEY_A, TOKEN
from tests.factories import make_task
from tests.fleet.factories import make_instance

pytestmark = pytest.mark.django_db


def spawn(coding):
    return spawn_review(
        coding, by="agent:coding", worktree_path="/w/review", branch_name="issue-1"
    )


def test_review_max_iterations_saved_in_the_database_decides_the_spawn_limit():
    coding = make_instance()
    for _ in range(3):
        spawn(coding)
    with pytest.raises(ReviewLimitReached):
        spawn(coding)  # spec 004's default: 3

    Setting.objects.put("review.max_iterations", 4, actor="user:alice")

    spawn(coding)
    assert coding.current_review_iteration() == 4
    with pytest.raises(ReviewLimitReached):
        spawn(coding)


def test_the_retry_limit_saved_in_the_database_decides_whether_a_task_blocks():
    task = make_task()
    task.retry_count = 2
    assert guards.retries_remain(task)  # the default: 5

    Setting.objects.put("tasks.max_retries", 2, actor="user:alice")

    assert not guards.retries_remain(task)


def test_a_task_starts_with_the_loop_limits_saved_in_the_database():
    task = make_task()
    Setting.objects.put("verification.max_cycles", 2, actor="user:alice")
    Setting.objects.put("review.max_cycles", 1, actor="user:alice")

    task.perform("start", by="worker:1")

    task.refresh_from_db()
    assert (task.verification_max_cycles, task.review_max_cycles) == (2, 1)


@pytest.fixture
def fernet(settings):
    """Key material to encrypt secrets with (not a configuration value)."""
    settings.CODEX_FERNET_KEYS = KEY_A


@responses.activate
def test_the_github_token_saved_in_the_console_is_the_one_github_calls_use(
    fernet, settings
):
    from integrations.github.client import github_client

    settings.CODEX_CREDENTIALS = {"github": ["ghp_fromTheEnvironment"], "claude": []}
    Setting.objects.put("github.token", TOKEN, actor="user:alice")
    responses.get(
        "https://api.github.com:443/user",
        json={"login": "codex-bot", "id": 1},
    )

    assert current_credential("github") == TOKEN
    assert github_client().get_user().login == "codex-bot"
    [call] = responses.calls
    assert call.request.headers["Authorization"] == f"token {TOKEN}"


def test_the_environment_token_stays_next_in_line_for_rotation(fernet, settings):
    settings.CODEX_CREDENTIALS = {"github": ["ghp_env1", TOKEN], "claude": []}
    Setting.objects.put("github.token", TOKEN, actor="user:alice")

    from codex.configuration.credentials import configured_credentials

    assert configured_credentials("github") == [TOKEN, "ghp_env1"]


def test_the_anthropic_key_saved_in_the_console_is_the_one_the_model_client_uses(
    fernet, settings
):
    from agents.claude import claude_client

    settings.CODEX_CREDENTIALS = {"github": [], "claude": []}
    Setting.objects.put("anthropic.api_key", "sk-ant-console-key", actor="user:alice")

    client = claude_client()

    assert client._sdk.api_key == "sk-ant-console-key"
