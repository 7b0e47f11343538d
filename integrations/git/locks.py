"""Locks on git folders: Codex's own, and the ones git leaves behind.

Codex's lock (`locked`) is an exclusive POSIX `flock` on `<folder>/codex.lock`,
local to one machine as the mirrors are. Operations that change a mirror's
administrative files (creating it, fetching, adding, removing or pruning
worktrees) and the local forge's merges hold it, so two workers on one machine
do not trip over git's own lock files ("index.lock exists", "cannot lock ref").

It is handed down to every git started while it is held (`lock_inherited`;
runner.git passes the descriptors on): git runs in a session of its own and
outlives a worker killed under it, so the lock must stay held until that git
has finished too, or the next worker's git would collide with it. A waiter
gives up after two of the longest git runs (`locked` raises wait_retry): a
holder past that is a killed worker's git stuck on a dead connection.

git's own lock files (`<ref>.lock`, `index.lock`) are held for moments by a
git at work, but a git that was killed (SIGKILL, out of memory, a power cut)
leaves its lock file behind for good. No git that Codex supervises runs longer
than CODEX_GIT_TIMEOUT_SECONDS, so `wait_out_lock_file` removes one older than
that, and otherwise says how long to wait until it may.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import math
import os
import re
import time
from collections.abc import Iterator
from contextvars import ContextVar
from pathlib import Path

from django.conf import settings

from codex.core.backoff import backoff_seconds
from codex.core.errors import NO_RESPONSE, Action, Source, make_error

logger = logging.getLogger(__name__)

LOCK_FILE = "codex.lock"
# The pauses between two tries to take a busy lock (`locked`): the first, and
# the longest they double up to.
FIRST_LOCK_POLL = 0.005
LOCK_POLL_SECONDS = 0.05
# How long a git at work may take to let go of a lock file.
LOCK_FILE_PAUSE_SECONDS = 0.2
GIT_LOCK_FILE = re.compile(r"Unable to create '(?P<path>[^']+\.lock)': File exists")

# The file descriptors of the flocks the caller holds (lock_inherited).
_held_locks: ContextVar[tuple[int, ...]] = ContextVar("git_held_locks", default=())


def held_locks() -> tuple[int, ...]:
    """The descriptors a git started now must inherit (runner.git)."""
    return _held_locks.get()


@contextlib.contextmanager
def lock_inherited(descriptor: int) -> Iterator[None]:
    """While this block runs, every git started inherits `descriptor` (an
    open file holding a flock): the lock is released only once this process
    and every such git have closed it."""
    token = _held_locks.set((*_held_locks.get(), descriptor))
    try:
        yield
    finally:
        _held_locks.reset(token)


@contextlib.contextmanager
def locked(repo: Path) -> Iterator[None]:
    """Hold the exclusive lock of git folder `repo` (created if missing) until
    the block and every git it started have finished (module docstring)."""
    repo.mkdir(parents=True, exist_ok=True)
    with open(repo / LOCK_FILE, "a") as handle:
        _acquire(handle, repo)
        # No explicit LOCK_UN: closing the file lets go of the lock, once every
        # git started meanwhile (which inherits it) has finished as well.
        with lock_inherited(handle.fileno()):
            yield


def _acquire(handle, repo: Path) -> None:
    """Take the lock of `handle`, waiting at most two of the longest git runs
    (2 x CODEX_GIT_TIMEOUT_SECONDS). A holder past that is a git of a killed
    worker stuck under the lock it inherited, which no timeout of Codex's
    stops any more: the step waits and retries rather than hang with it."""
    limit = 2 * settings.CODEX_GIT_TIMEOUT_SECONDS
    deadline = time.monotonic() + limit
    attempt = 0
    while True:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise make_error(
                    Source.GIT,
                    NO_RESPONSE,
                    Action.WAIT_RETRY,
                    f"{repo} stayed locked for {limit:g}s: a git started under "
                    "its lock is still running",
                ).exception() from None
            time.sleep(
                backoff_seconds(
                    attempt, base=FIRST_LOCK_POLL, cap=LOCK_POLL_SECONDS, jitter=False
                )
            )
            attempt += 1


def wait_out_lock_file(stderr: str) -> int | None:
    """For a git that found a lock file in its way (its `stderr`): the seconds
    until that file counts as abandoned, or None to retry at the usual pace
    (it is gone already, or it was abandoned and is removed here)."""
    found = GIT_LOCK_FILE.search(stderr)
    if found is None:
        return None
    path = found.group("path")
    try:
        age = time.time() - os.stat(path).st_mtime
    except OSError:
        return None
    limit = settings.CODEX_GIT_TIMEOUT_SECONDS
    if age < limit:
        # A git at work lets go in moments; only a lock still there is one
        # to wait out.
        time.sleep(LOCK_FILE_PAUSE_SECONDS)
        return None if not os.path.exists(path) else math.ceil(limit - age)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    logger.warning(
        "removed %s: a git killed %.0fs ago left it (no git Codex runs lives "
        "longer than %ss)",
        path,
        age,
        limit,
    )
    return None
