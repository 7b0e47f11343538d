"""A task's worktree as Codex makes one: a bare mirror, a commit on main and
a worktree of it on its own branch (its `.git` a file pointing at the
mirror), for the tools that run git on it."""

from __future__ import annotations

from pathlib import Path

from integrations.git import add_worktree, run_git
from integrations.git.repository import identity_env


def git_worktree(folder: Path, files: dict[str, str | bytes]) -> Path:
    """A worktree under `folder` whose main branch holds `files` committed."""
    folder.mkdir(parents=True, exist_ok=True)
    mirror = folder / "mirror.git"
    seed = folder / "seed"
    run_git(["init", "--quiet", "--bare", str(mirror)], folder)
    run_git(["init", "--quiet", "-b", "main", str(seed)], folder)
    for name, content in files.items():
        path = seed / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
    run_git(["add", "--all"], seed)
    run_git(["commit", "--quiet", "-m", "seed"], seed, env=identity_env())
    run_git(["push", "--quiet", str(mirror), "main:main"], seed)
    return add_worktree(mirror, folder / "worktree", "codex/task", "main")
