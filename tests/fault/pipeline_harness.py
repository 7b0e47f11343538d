"""Fixtures of the pipeline fault tests (a pytest plugin of their modules): a
task on a GitHub-forge repository, advanced in-process by advance_task with
the real AgentPhaseRunner: the anthropic SDK against the loopback model stub
(tests/model_stub.py), PyGithub against FakeGitHub (over `responses`), git
against a bare repository on disk that stands in for github.com's remote.
"""

from __future__ import annotations

import pytest
import responses
from django.core.cache import cache

from codex.claims.models import IssueClaim
from codex.repositories.models import Repository
from codex.tasks.models import Task
from integrations.github.forge import GitHubForge
from tests.configuration.factories import KEY_A
from tests.factories import make_task
from tests.fault.github_fake import BOT_LOGIN, FakeGitHub
from tests.fault.pipeline_steps import ISSUE, TOKENS, Agents
from tests.integrations.github.payloads import REPO_URL


@pytest.fixture
def agents(stub) -> Agents:
    answering = Agents()
    stub.responder = answering
    return answering


@pytest.fixture
def github_env(agent_settings, monkeypatch, bare_repo):
    """GitHub tokens, no pacing, the remote redirected to the bare repository."""
    settings = agent_settings
    settings.CODEX_GITHUB_SECONDS_BETWEEN_REQUESTS = None
    settings.CODEX_GITHUB_SECONDS_BETWEEN_WRITES = None
    settings.CODEX_GITHUB_RETRY_BACKOFF = 0
    settings.CODEX_CREDENTIALS = {"claude": ["test-key"], "github": list(TOKENS)}
    settings.GITHUB_APP_ID = ""
    settings.GITHUB_APP_PRIVATE_KEY = ""
    settings.GITHUB_APP_INSTALLATION_ID = ""
    settings.GITHUB_BASE_URL = "https://api.github.com"
    settings.CODEX_BOT_LOGIN = BOT_LOGIN
    settings.CODEX_FERNET_KEYS = KEY_A
    # github.com's git remote, for this test: the bare repository on disk.
    monkeypatch.setattr(GitHubForge, "remote_url", lambda self: f"file://{bare_repo}")
    cache.clear()
    yield settings
    cache.clear()


@pytest.fixture
def github(github_env, bare_repo):
    """The fake GitHub; a request it has no route for fails the test."""
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        yield FakeGitHub(mock, bare_repo, ISSUE)


@pytest.fixture
def claimed_task(github_env) -> Task:
    """A task from issue #1 of the GitHub repository, whose claim it holds."""
    repository = Repository.objects.create(url=REPO_URL)
    IssueClaim.objects.claim(repository, ISSUE, "backlog-session-1", title="mul")
    return make_task(
        repository,
        title="Add multiplication",
        description="calc needs mul",
        acceptance_criteria="- mul(2, 3) == 6",
        issue_number=ISSUE,
        created_by="api",
    )
