"""The GitHub token goes to the configured GitHub's origin only: a repository
row pointing elsewhere (an operator's, or one stored before intake checked
URLs) is fetched without it and gets no GitHub client at all."""

from __future__ import annotations

import base64
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import responses

from codex.core.errors import Action, ClassifiedFailure
from integrations.git import ensure_mirror
from integrations.github.forge import GitHubForge
from tests.factories import make_repository
from tests.integrations.github.conftest import TOKENS

BASIC = base64.b64encode(f"x-access-token:{TOKENS[0]}".encode()).decode()


class Recorder(BaseHTTPRequestHandler):
    """Answers 404 to everything and records each request's headers."""

    seen: list[dict[str, str]]

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        self.seen.append({"path": self.path, **dict(self.headers.items())})
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_POST = do_GET

    def log_message(self, *args) -> None:
        """Quiet: the test reads what was recorded."""


@pytest.fixture
def elsewhere() -> Iterator[tuple[str, list[dict[str, str]]]]:
    """A loopback HTTP server (the attacker's host) and what it was sent."""
    seen: list[dict[str, str]] = []
    handler = type("Handler", (Recorder,), {"seen": seen})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", seen
    server.shutdown()
    server.server_close()


@pytest.fixture(autouse=True)
def _mirrors(settings, tmp_path):
    settings.CODEX_MIRROR_ROOT = str(tmp_path / "mirrors")
    settings.CODEX_WORKTREE_ROOT = str(tmp_path / "worktrees")


def assert_no_credential(seen: list[dict[str, str]]) -> None:
    for request in seen:
        sent = " ".join(f"{name}: {value}" for name, value in request.items())
        assert "authorization" not in sent.lower(), sent
        assert TOKENS[0] not in sent and BASIC not in sent, sent


@pytest.mark.django_db
def test_git_fetches_another_host_without_the_token(elsewhere):
    base, seen = elsewhere
    repository = make_repository(f"{base}/evil/repo", registered_on_first_use=True)
    forge = GitHubForge(repository)

    env = forge.git_credentials()
    assert env == {"GIT_TERMINAL_PROMPT": "0"}
    with pytest.raises(ClassifiedFailure):
        ensure_mirror(repository, forge.remote_url(), env)

    assert seen, "git did connect to the other host"
    assert seen[0]["path"].startswith("/evil/repo.git/info/refs")
    assert_no_credential(seen)


@pytest.mark.django_db
def test_githubs_credential_is_scoped_so_git_never_sends_it_elsewhere(elsewhere):
    """The second lock: even given the github.com credential, git applies it
    only to URLs of that origin."""
    base, seen = elsewhere
    github_env = GitHubForge(
        make_repository("https://github.com/acme/web")
    ).git_credentials()
    assert github_env["GIT_CONFIG_KEY_0"] == "http.https://github.com/.extraheader"
    repository = make_repository(f"{base}/evil/repo")

    with pytest.raises(ClassifiedFailure):
        ensure_mirror(repository, f"{base}/evil/repo.git", github_env)

    assert seen
    assert_no_credential(seen)


@pytest.mark.django_db
@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:18803/evil/repo",
        "http://github.com/acme/web",
        "https://github.com:8443/acme/web",
        "https://gitlab.com/acme/web",
        "https://api.github.com/acme/web",
        "http://[::1]:18800/a/b",
    ],
)
def test_no_credential_for_a_remote_off_the_configured_origin(url):
    env = GitHubForge(make_repository(url)).git_credentials()
    assert env == {"GIT_TERMINAL_PROMPT": "0"}


@pytest.mark.django_db
def test_the_github_client_is_refused_for_a_repository_elsewhere(elsewhere):
    base, seen = elsewhere
    repository = make_repository(f"{base}/evil/repo")

    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        with pytest.raises(ClassifiedFailure) as refused:
            GitHubForge(repository).get_pull_request(2)
        assert len(mock.calls) == 0  # not even to the configured API
    assert refused.value.action is Action.MANUAL_REVIEW
    assert "not on the configured GitHub" in str(refused.value)
    assert seen == []


@pytest.mark.django_db
def test_enterprise_scopes_the_credential_to_its_own_host(settings):
    settings.GITHUB_BASE_URL = "https://ghe.example.com/api/v3"
    enterprise = GitHubForge(make_repository("https://ghe.example.com/acme/web"))
    public = GitHubForge(make_repository("https://github.com/acme/web"))

    env = enterprise.git_credentials()
    assert env["GIT_CONFIG_KEY_0"] == "http.https://ghe.example.com/.extraheader"
    assert public.git_credentials() == {"GIT_TERMINAL_PROMPT": "0"}
