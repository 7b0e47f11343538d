"""Another git holding a lock of the repository is a reason to wait, not to
give up (integrations/git/runner.py): a collision is retried, a lock file left
by a killed git is removed once no supervised git can still hold it, and a
lock of Codex's own stays held until the git started under it has finished,
even when the worker that took it is killed first."""

from __future__ import annotations

import fcntl
import multiprocessing
import os
import signal
import threading
import time
from pathlib import Path

import pytest

from codex.core.errors import Action, ClassifiedFailure
from codex.repositories.models import Repository
from integrations.git import ensure_mirror, runner
from integrations.git.locks import LOCK_FILE, locked
from integrations.git.runner import classify_stderr, run_git
from tests.integrations.git.helpers import IDENTITY, clone, commit_file

LOCK_COLLISION = (
    "error: cannot lock ref 'refs/remotes/origin/main': is at "
    "0ab410375207a0a8faca24c4217a90af1385340a but expected "
    "8555b3e38b251c97415c381fc846496841f5fc77\n"
)
LOCK_FILE_LEFT = (
    "fatal: Unable to create '/srv/m.git/worktrees/T-1/index.lock': File exists.\n"
    "\nAnother git process seems to be running in this repository, e.g.\n"
)


@pytest.mark.parametrize("stderr", [LOCK_COLLISION, LOCK_FILE_LEFT])
def test_a_lock_held_by_another_git_is_wait_retry_not_abort(stderr):
    failure = classify_stderr(["fetch", "origin"], 1, stderr)
    assert failure.action == Action.WAIT_RETRY
    assert failure.recoverable
    assert failure.message.startswith("Repository busy")


def repository_with_a_change(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    run_git(["init", "--quiet", str(repo)], tmp_path)
    (repo / "a.txt").write_text("a\n")
    return repo


def add_past_an_index_lock(repo: Path, age: float) -> tuple[ClassifiedFailure, Path]:
    """`git add --all` in `repo` while an index.lock `age` seconds old is in
    its way: the failure, and the lock file's path."""
    lock = repo / ".git" / "index.lock"
    lock.touch()
    then = time.time() - age
    os.utime(lock, (then, then))
    with pytest.raises(ClassifiedFailure) as excinfo:
        run_git(["add", "--all"], repo)
    assert excinfo.value.action == Action.WAIT_RETRY
    return excinfo.value, lock


def test_a_lock_file_older_than_any_git_is_removed_and_the_retry_succeeds(
    tmp_path, settings
):
    settings.CODEX_GIT_TIMEOUT_SECONDS = 60
    repo = repository_with_a_change(tmp_path)
    failure, lock = add_past_an_index_lock(repo, 61)
    assert failure.retry_after is None  # free again: the usual backoff
    assert not lock.exists()
    run_git(["add", "--all"], repo)
    assert run_git(["diff", "--cached", "--name-only"], repo).split() == ["a.txt"]


def test_a_younger_lock_file_is_kept_and_waited_out(tmp_path, settings):
    # It may belong to a git still at work: only once it is older than any
    # git Codex supervises may it be removed, so the retry waits until then.
    settings.CODEX_GIT_TIMEOUT_SECONDS = 60
    failure, lock = add_past_an_index_lock(repository_with_a_change(tmp_path), 20)
    assert 39 <= failure.retry_after <= 41
    assert lock.exists()


def test_a_fetch_that_collides_with_another_git_runs_again(tmp_path, monkeypatch):
    remote = tmp_path / "remote.git"
    run_git(
        ["init", "--bare", "--quiet", "--initial-branch=main", str(remote)], tmp_path
    )
    seed = clone(remote, tmp_path / "seed")
    commit_file(seed, "README.md", "one\n", "first")
    run_git(["push", "--quiet", "origin", "HEAD:refs/heads/main"], seed)
    repository = Repository(url=f"file://{remote}", forge="local")
    mirror = ensure_mirror(repository, str(remote), {})
    newer = commit_file(seed, "README.md", "two\n", "second")
    run_git(["push", "--quiet", "origin", "HEAD:refs/heads/main"], seed)
    # Another git (a push's remote-tracking update) holds the ref's lock; it
    # lets go while the fetch pauses.
    held = mirror / "refs" / "remotes" / "origin" / "main.lock"
    # A new mirror's refs are packed (it was cloned): no folder for them yet.
    held.parent.mkdir(parents=True, exist_ok=True)
    held.touch()
    pauses = []

    def pause(attempt: int) -> None:
        pauses.append(attempt)
        held.unlink(missing_ok=True)

    monkeypatch.setattr(runner, "pause_while_busy", pause)
    ensure_mirror(repository, str(remote), {})
    assert pauses == [1]
    assert run_git(["rev-parse", "refs/remotes/origin/main"], mirror).strip() == newer


def test_a_folder_deleted_while_git_runs_in_it_is_wait_retry(tmp_path):
    # The orphan reaper or a person removed the worktree under a running step.
    repo = repository_with_a_change(tmp_path)
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.write_text(f'#!/bin/sh\nrm -rf "{repo}"\nexit 1\n')
    hook.chmod(0o755)
    run_git(["add", "--all"], repo)
    with pytest.raises(ClassifiedFailure) as excinfo:
        # Codex runs no hook (runner.HARDENED); the test names its own.
        run_git([*TEST_HOOKS(repo), "commit", "--quiet", "-m", "x"], repo, IDENTITY)
    assert excinfo.value.action == Action.WAIT_RETRY
    assert "is gone" in excinfo.value.message


def TEST_HOOKS(repo: Path) -> list[str]:  # noqa: N802 - reads as a constant
    """The hooks of the test's repository, which Codex's own commands never run:
    a hook is how these tests hold git in the middle of its work."""
    return ["-c", f"core.hooksPath={repo / '.git' / 'hooks'}"]


def _commit_under_lock(guarded: Path, repo: Path) -> None:
    with locked(guarded):
        run_git(
            [*TEST_HOOKS(repo), "commit", "--quiet", "--allow-empty", "-m", "x"],
            repo,
            IDENTITY,
        )


def _can_lock(guarded: Path) -> bool:
    with open(guarded / LOCK_FILE, "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        fcntl.flock(handle, fcntl.LOCK_UN)
        return True


def _wait_until(condition, what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def test_a_lock_stays_held_while_the_git_of_a_killed_worker_still_runs(tmp_path):
    # git runs in a session of its own, so it outlives a worker killed with
    # SIGKILL. Were the lock released with the worker, the next worker's git
    # would collide with the one still running ("cannot lock ref").
    repo = tmp_path / "repo"
    run_git(["init", "--quiet", str(repo)], tmp_path)
    started, release = tmp_path / "started", tmp_path / "release"
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.write_text(
        f'#!/bin/sh\ntouch "{started}"\n'
        f'while [ ! -e "{release}" ]; do sleep 0.05; done\n'
    )
    hook.chmod(0o755)
    guarded = tmp_path / "mirror.git"
    worker = multiprocessing.get_context("fork").Process(
        target=_commit_under_lock, args=(guarded, repo)
    )
    worker.start()
    try:
        _wait_until(started.exists, "git to start under the lock")
        os.kill(worker.pid, signal.SIGKILL)
        worker.join(timeout=10)
        assert worker.exitcode == -signal.SIGKILL
        assert not _can_lock(guarded), "the lock went with the killed worker"
    finally:
        release.touch()
    _wait_until(lambda: _can_lock(guarded), "the orphaned git to finish")
    assert run_git(["log", "--format=%s"], repo).split() == ["x"]


def test_a_lock_held_for_longer_than_two_git_runs_is_wait_retry(tmp_path, settings):
    # The holder is a git stuck under a lock it inherited from a killed worker:
    # the step retries later instead of hanging with it.
    settings.CODEX_GIT_TIMEOUT_SECONDS = 0.1
    guarded = tmp_path / "mirror.git"
    with locked(guarded):
        started = time.monotonic()
        with pytest.raises(ClassifiedFailure) as excinfo, locked(guarded):
            pass
        waited = time.monotonic() - started
    assert waited >= 0.2
    assert excinfo.value.action == Action.WAIT_RETRY
    assert "stayed locked for 0.2s" in excinfo.value.message
    assert _can_lock(guarded)


def test_a_lock_let_go_meanwhile_is_taken(tmp_path, settings):
    settings.CODEX_GIT_TIMEOUT_SECONDS = 30
    guarded = tmp_path / "mirror.git"
    guarded.mkdir()
    holder = open(guarded / LOCK_FILE, "a")  # noqa: SIM115 (closed by the timer)
    fcntl.flock(holder, fcntl.LOCK_EX)
    threading.Timer(0.2, holder.close).start()
    started = time.monotonic()
    with locked(guarded):
        waited = time.monotonic() - started
        assert holder.closed
    assert waited >= 0.15
