"""The jail on this machine's kernel, for the tests that run what detection
derives (skipped, with the reason, only where bubblewrap cannot run)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from integrations.jail import Jail, Limits
from integrations.jail.backends import JailUnavailable, backend_named, forget_backends
from tests.agents.ecosystems.projects import Remote
from tests.factories import make_repository


@pytest.fixture
def bubblewrap():
    forget_backends()
    try:
        backend = backend_named("bubblewrap")
    except JailUnavailable as exc:
        pytest.skip(f"the kernel refuses the jail here: {exc}")
    yield backend
    forget_backends()


@pytest.fixture
def jailed(bubblewrap, settings):
    """Makes the jail of a worktree; commands find this venv's Python (with
    pytest) after the worktree's own `.venv`, and node and npm."""
    settings.CODEX_SANDBOX = "bubblewrap"
    settings.CODEX_SANDBOX_PATH = f"{Path(sys.executable).parent}:{os.defpath}"

    def make(worktree: Path, seconds: float = 120) -> Jail:
        return Jail.for_worktree(
            worktree,
            backend=bubblewrap,
            limits=Limits(wall_seconds=seconds, cpu_seconds=int(seconds)),
        )

    return make


@pytest.fixture
def remote(db, tmp_path, settings):
    """Makes a Remote of given files for a registered repository."""
    settings.CODEX_MIRROR_ROOT = str(tmp_path / "mirrors")

    def make(files: dict[str, str], **fields) -> Remote:
        root = tmp_path / "project"
        root.mkdir()
        repository = make_repository(url=f"file://{root / 'remote.git'}", **fields)
        return Remote(root, repository, files)

    return make
