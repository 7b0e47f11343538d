"""The `.env` that holds the keys (docker-compose.yml says to make it) is
ignored by git and left out of the image's build context."""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_git_ignores_the_env_file():
    result = subprocess.run(
        ["git", "check-ignore", "--no-index", "-q", ".env"], cwd=ROOT, check=False
    )
    assert result.returncode == 0


def test_docker_leaves_it_out_of_the_build_context():
    patterns = (ROOT / ".dockerignore").read_text().split()
    assert ".env" in patterns and ".env.*" in patterns
