from __future__ import annotations

from pathlib import Path

import pytest

from tests.integrations.git.helpers import make_remote


@pytest.fixture(autouse=True)
def _git_roots(settings, tmp_path):
    """Mirrors and worktrees inside this test's folder."""
    settings.CODEX_MIRROR_ROOT = str(tmp_path / "mirrors")
    settings.CODEX_WORKTREE_ROOT = str(tmp_path / "worktrees")
    settings.CODEX_GIT_AUTHOR_NAME = "Codex Bot"
    settings.CODEX_GIT_AUTHOR_EMAIL = "codex@example.org"


@pytest.fixture
def remote(tmp_path) -> Path:
    """A bare remote with one commit on main."""
    return make_remote(tmp_path / "remotes")
