"""run_git: no credentials on the command line or in messages, a scrubbed
environment, timeouts, and the classification of git's failures."""

from __future__ import annotations

import base64
import os
import socket
import subprocess
import threading
import time

import pytest

from codex.core.errors import Action, ClassifiedFailure
from codex.repositories.models import Repository
from integrations.git import ensure_mirror, run_git, runner
from integrations.git.runner import classify_stderr, git_environment, scrub

TOKEN = "ghs_s3cretT0kenValue1234567890"
BASIC = base64.b64encode(f"x-access-token:{TOKEN}".encode()).decode()


def credential_env() -> dict[str, str]:
    """What GitHubForge.git_credentials gives: an extra header, only in env."""
    return {
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": "http.extraheader",
        "GIT_CONFIG_VALUE_0": f"AUTHORIZATION: basic {BASIC}",
    }


@pytest.fixture
def spawned(monkeypatch):
    """Every git process run_git starts: its argv and environment."""
    calls: list[dict] = []
    real = subprocess.Popen

    def recording(args, **kwargs):
        calls.append({"args": list(args), "env": dict(kwargs.get("env") or {})})
        return real(args, **kwargs)

    monkeypatch.setattr(runner.subprocess, "Popen", recording)
    return calls


def test_credentials_go_only_through_the_environment(remote, spawned, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-not-for-git")
    monkeypatch.setenv("DATABASE_URL", "postgres://u:p@db/codex")

    ensure_mirror(Repository(url=f"file://{remote}"), str(remote), credential_env())

    assert spawned
    # A new mirror's first fetch is a clone.
    fetch = next(call for call in spawned if "clone" in call["args"])
    assert fetch["env"]["GIT_CONFIG_VALUE_0"] == f"AUTHORIZATION: basic {BASIC}"
    for call in spawned:
        argv = " ".join(call["args"])
        assert TOKEN not in argv and BASIC not in argv
        assert call["args"][0] == "git"
        env = call["env"]
        assert env["GIT_TERMINAL_PROMPT"] == "0"
        assert "ANTHROPIC_API_KEY" not in env and "DATABASE_URL" not in env
        assert set(env) <= {
            "PATH",
            "HOME",
            "LANG",
            "LC_ALL",
            "GIT_TERMINAL_PROMPT",
            "GIT_CONFIG_COUNT",
            "GIT_CONFIG_KEY_0",
            "GIT_CONFIG_VALUE_0",
            # No machine-wide or user configuration is read (runner.HARDENED).
            "GIT_CONFIG_NOSYSTEM",
            "GIT_CONFIG_GLOBAL",
            "GIT_ATTR_NOSYSTEM",
        }
        assert env["GIT_CONFIG_GLOBAL"] == os.devnull
        assert "core.hooksPath=/dev/null" in call["args"]


def test_credentials_in_arguments_are_refused_before_git_starts(tmp_path, spawned):
    with pytest.raises(ValueError):
        run_git(["fetch", f"https://x:{TOKEN}@example.com/a/b"], tmp_path)
    with pytest.raises(ValueError):
        run_git(["fetch", "origin", TOKEN], tmp_path, {"GITHUB_TOKEN": TOKEN})
    assert spawned == []


def test_error_messages_never_contain_credentials(tmp_path):
    # A git that prints its credential header and a URL with a token, then fails.
    leak = (
        '!f() { echo "Authorization: $GIT_CONFIG_VALUE_0" >&2; '
        # (the URL is split in two, or run_git would refuse the argument itself)
        'echo "fatal: unable to access https:/""/user:$LEAKED@example.com/" >&2; '
        "exit 3; }; f"
    )
    run_git(["init", "--quiet", str(tmp_path / "r")], tmp_path)
    env = {**credential_env(), "LEAKED": TOKEN}
    with pytest.raises(ClassifiedFailure) as excinfo:
        run_git(["-c", f"alias.leak={leak}", "leak"], tmp_path / "r", env)
    failure = excinfo.value
    everything = " ".join(
        [str(failure), repr(failure.error.as_dict()), failure.error.original.stderr]
    )
    assert TOKEN not in everything
    assert BASIC not in everything
    assert "unable to access https://***@example.com/" in failure.error.message
    assert failure.source == "git"


def test_fetch_failure_from_a_missing_remote_aborts_without_credentials(tmp_path):
    run_git(["init", "--quiet", "--bare", str(tmp_path / "m.git")], tmp_path)
    with pytest.raises(ClassifiedFailure) as excinfo:
        run_git(
            ["fetch", str(tmp_path / "nowhere.git")],
            tmp_path / "m.git",
            credential_env(),
        )
    assert excinfo.value.action == Action.ABORT
    assert not excinfo.value.recoverable
    assert TOKEN not in str(excinfo.value) and BASIC not in str(excinfo.value)


@pytest.fixture
def silent_server():
    """A git:// server on loopback that accepts connections and never answers."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def serve() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                connection, _ = server.accept()
            except OSError:
                continue
            accepted.append(connection)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join()
    for connection in accepted:
        connection.close()
    server.close()


def test_a_hanging_git_times_out_as_wait_retry(tmp_path, silent_server):
    run_git(["init", "--quiet", "--bare", str(tmp_path / "m.git")], tmp_path)
    started = time.monotonic()
    with pytest.raises(ClassifiedFailure) as excinfo:
        run_git(
            ["fetch", f"git://127.0.0.1:{silent_server}/web.git"],
            tmp_path / "m.git",
            timeout=1,
        )
    assert time.monotonic() - started < 10
    assert excinfo.value.action == Action.WAIT_RETRY
    assert excinfo.value.recoverable
    assert "longer than 1s" in excinfo.value.error.message


def test_a_stalled_http_transfer_is_given_up_by_git_itself(
    tmp_path, silent_server, settings
):
    # Also what stops the git of a killed worker, which no timeout of ours
    # reaches: it would wait on the dead connection for ever.
    settings.CODEX_GIT_STALL_SECONDS = 1
    with pytest.raises(ClassifiedFailure) as excinfo:
        run_git(
            ["ls-remote", f"http://127.0.0.1:{silent_server}/web.git"],
            tmp_path,
            timeout=60,
        )
    assert excinfo.value.action == Action.WAIT_RETRY
    assert "Operation too slow" in excinfo.value.error.message


def test_timeout_uses_the_setting(tmp_path, settings, silent_server):
    settings.CODEX_GIT_TIMEOUT_SECONDS = 2
    run_git(["init", "--quiet", "--bare", str(tmp_path / "m.git")], tmp_path)
    started = time.monotonic()
    with pytest.raises(ClassifiedFailure) as excinfo:
        run_git(
            ["fetch", f"git://127.0.0.1:{silent_server}/web.git"], tmp_path / "m.git"
        )
    assert 2 <= time.monotonic() - started < 10
    assert excinfo.value.action == Action.WAIT_RETRY
    assert "longer than 2s" in excinfo.value.error.message


def test_a_git_that_is_done_is_reaped_without_polling(tmp_path, monkeypatch):
    """Waiting with a timeout polls with sleeps (milliseconds per git on a
    busy machine): the timeout is a watchdog's, and git is waited for as it
    exits."""
    waits: list[float | None] = []
    real = subprocess.Popen.wait

    def wait(self, timeout=None):
        waits.append(timeout)
        return real(self, timeout)

    monkeypatch.setattr(subprocess.Popen, "wait", wait)
    assert run_git(["version"], tmp_path).startswith("git version")
    assert waits and all(timeout is None for timeout in waits)


def test_a_missing_folder_waits_for_the_next_step_to_recreate_it(tmp_path):
    # A worktree deleted under a running agent: retryable, not an abort (the
    # next step makes the worktree again from the pushed branch).
    with pytest.raises(ClassifiedFailure) as excinfo:
        run_git(["status"], tmp_path / "does-not-exist")
    assert excinfo.value.action == Action.WAIT_RETRY
    assert "is gone" in excinfo.value.message


def test_git_missing_still_aborts(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "no-git-here"))
    with pytest.raises(ClassifiedFailure) as excinfo:
        run_git(["status"], tmp_path)
    assert excinfo.value.action == Action.ABORT


@pytest.mark.parametrize(
    ("stderr", "action"),
    [
        (
            " ! [rejected]        HEAD -> codex/x (fetch first)\n"
            "error: failed to push some refs to '/srv/web.git'\n",
            Action.PULL_RETRY,
        ),
        (
            " ! [rejected]        HEAD -> main (non-fast-forward)\n",
            Action.PULL_RETRY,
        ),
        (
            "remote: Invalid username or password.\n"
            "fatal: Authentication failed for 'https://github.com/a/b/'\n",
            Action.ROTATE_TOKEN,
        ),
        (
            "fatal: could not read Username for 'https://github.com': "
            "terminal prompts disabled\n",
            Action.ROTATE_TOKEN,
        ),
        (
            "fatal: unable to access 'https://github.com/a/b/': "
            "The requested URL returned error: 403\n",
            Action.ROTATE_TOKEN,
        ),
        (
            "CONFLICT (content): Merge conflict in a.txt\n"
            "Automatic merge failed; fix conflicts and then commit the result.\n",
            Action.MANUAL_REVIEW,
        ),
        (
            "fatal: unable to access 'https://github.com/a/b/': "
            "Could not resolve host: github.com\n",
            Action.WAIT_RETRY,
        ),
        (
            "fatal: unable to access 'https://github.com/a/b/': "
            "The requested URL returned error: 502\n",
            Action.WAIT_RETRY,
        ),
        (
            "error: RPC failed; curl 92 HTTP/2 stream 5 was not closed cleanly: "
            "CANCEL (err 8)\nfatal: early EOF\n",
            Action.WAIT_RETRY,
        ),
        (
            "error: RPC failed; curl 56 GnuTLS recv error (-9): Error decoding "
            "the received TLS packet.\n",
            Action.WAIT_RETRY,
        ),
        (
            "error: RPC failed; curl 18 transfer closed with outstanding read data "
            "remaining\n",
            Action.WAIT_RETRY,
        ),
        (
            "fatal: unable to access 'https://github.com/a/b/': OpenSSL SSL_read: "
            "SSL_ERROR_SYSCALL, errno 0\n",
            Action.WAIT_RETRY,
        ),
        (
            "fatal: unable to access 'https://github.com/a/b/': gnutls_handshake() "
            "failed: The TLS connection was non-properly terminated.\n",
            Action.WAIT_RETRY,
        ),
        (
            "error: 1234 bytes of body are still expected\nfetch-pack: unexpected "
            "disconnect while reading sideband packet\n",
            Action.WAIT_RETRY,
        ),
        (
            "fatal: unable to access 'https://github.com/a/b/': The requested URL "
            "returned error: 429\n",
            Action.WAIT_RETRY,
        ),
        (
            "fatal: unable to access 'https://github.com/a/b/': Could not resolve "
            "host: github.com (Temporary failure in name resolution)\n",
            Action.WAIT_RETRY,
        ),
        # Too large stays too large: retrying cannot help.
        (
            "error: RPC failed; HTTP 413 curl 22 The requested URL returned error: "
            "413\nfatal: the remote end hung up unexpectedly\n",
            "abort",
        ),
        ("fatal: not a git repository (or any of the parent directories)\n", "abort"),
    ],
)
def test_classification(stderr, action):
    failure = classify_stderr(["push", "origin"], 1, stderr)
    assert failure.action == action
    assert failure.source == "git"
    assert failure.code == 0


def test_scrub():
    text = (
        f"https://x-access-token:{TOKEN}@github.com/a/b "
        "Authorization: Bearer abcdef123456"
    )
    assert scrub(text) == "https://***@github.com/a/b Authorization: ***"
    assert scrub(f"token {TOKEN} here", [TOKEN]) == "token *** here"


def test_environment_is_minimal(monkeypatch):
    monkeypatch.setenv("SECRET_KEY", "django-secret")
    monkeypatch.setenv("GIT_DIR", "/somewhere/else")
    env = git_environment({"GIT_CONFIG_COUNT": "0"})
    assert "SECRET_KEY" not in env and "GIT_DIR" not in env
    assert env["LANG"] == "C" and env["GIT_TERMINAL_PROMPT"] == "0"
    assert env["GIT_CONFIG_COUNT"] == "0"
