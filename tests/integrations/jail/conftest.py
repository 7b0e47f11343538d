"""A worktree of a real repository and its jail on this machine's kernel.

The jail tests run on real namespaces. They are skipped, with the reason,
only where bubblewrap cannot create them; in CI (CODEX_REQUIRE_POSTGRESQL=1)
a skip fails the run, so there the jail is always exercised.
"""

from __future__ import annotations

import pytest

from integrations.git import add_worktree, ensure_mirror
from integrations.jail import Jail, JailUnavailable, Limits
from integrations.jail.backends import backend_named, forget_backends
from tests.factories import make_repository
from tests.integrations.git.helpers import make_remote


@pytest.fixture
def bubblewrap():
    forget_backends()
    try:
        return backend_named("bubblewrap")
    except JailUnavailable as exc:
        pytest.skip(f"the kernel refuses the jail here: {exc}")


@pytest.fixture
def git_worktree(db, tmp_path, settings):
    """A task's worktree (a `.git` file pointing at its mirror), as the phase
    runner makes it."""
    settings.CODEX_MIRROR_ROOT = str(tmp_path / "mirrors")
    settings.CODEX_WORKTREE_ROOT = str(tmp_path / "worktrees")
    remote = make_remote(tmp_path / "remotes")
    repository = make_repository(url=f"file://{remote}")
    mirror = ensure_mirror(repository, f"file://{remote}")
    worktree = add_worktree(mirror, tmp_path / "worktrees" / "T-1", "codex/T-1", "main")
    return worktree, mirror, remote


@pytest.fixture
def jail(bubblewrap, git_worktree):
    worktree, _mirror, _remote = git_worktree
    return Jail.for_worktree(
        worktree,
        backend=bubblewrap,
        limits=Limits(wall_seconds=10, cpu_seconds=10, output_chars=20_000),
    )
