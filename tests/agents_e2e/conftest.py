"""A bare repository with a tiny Python project on the local forge (the demo's,
without its README), a loopback Messages API, and the settings that point the
agent runner at them."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from agents.demo import CALC, TEST_CALC, create_bare_repository
from tests.model_stub import ModelStub


@pytest.fixture
def bare_repo(tmp_path) -> Path:
    """remote/sample.git: main holds calc.py and its pytest test."""
    return create_bare_repository(
        tmp_path / "remote", seed={"calc.py": CALC, "test_calc.py": TEST_CALC}
    )


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
