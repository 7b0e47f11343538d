"""A bare repository with a tiny Python project on the local forge, a
loopback Messages API, and the settings that point the agent runner at them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.model_stub import ModelStub

CALC = "def add(a, b):\n    return a + b\n"
TEST_CALC = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
GIT_ENV = {
    "GIT_AUTHOR_NAME": "Sample",
    "GIT_AUTHOR_EMAIL": "sample@example.com",
    "GIT_COMMITTER_NAME": "Sample",
    "GIT_COMMITTER_EMAIL": "sample@example.com",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(*args: str, cwd: Path) -> str:
    return subprocess.run(
        ["git", *args],
        cwd=cwd,
        env={**os.environ, **GIT_ENV},
        check=True,
        capture_output=True,
        text=True,
    ).stdout


@pytest.fixture
def bare_repo(tmp_path) -> Path:
    """remote/sample.git: main holds calc.py and its pytest test."""
    work = tmp_path / "seed"
    work.mkdir()
    (work / "calc.py").write_text(CALC)
    (work / "test_calc.py").write_text(TEST_CALC)
    git("init", "--quiet", "-b", "main", cwd=work)
    git("add", "--all", cwd=work)
    git("-c", "commit.gpgsign=false", "commit", "--quiet", "-m", "seed", cwd=work)
    bare = tmp_path / "remote" / "sample.git"
    bare.parent.mkdir()
    git("clone", "--quiet", "--bare", str(work), str(bare), cwd=tmp_path)
    return bare


@pytest.fixture
def stub():
    with ModelStub() as server:
        yield server


@pytest.fixture
def agent_settings(settings, tmp_path, stub):
    settings.CODEX_PHASE_RUNNER = "agents.phase_runner.AgentPhaseRunner"
    settings.ANTHROPIC_BASE_URL = stub.url
    settings.CODEX_CREDENTIALS = {"claude": ["test-key"], "github": []}
    settings.CODEX_WORKTREE_ROOT = str(tmp_path / "worktrees")
    settings.CODEX_MIRROR_ROOT = str(tmp_path / "mirrors")
    settings.CODEX_MODEL_MAX_RETRIES = 0
    # The sandbox's commands find this venv's python (with pytest) first.
    settings.CODEX_SANDBOX_PATH = f"{Path(sys.executable).parent}:{os.defpath}"
    return settings
