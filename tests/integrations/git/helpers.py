"""Real git repositories in a temporary folder, for the git and local forge tests.

Set-up commands go through integrations.git's runner too: it is the only code
that runs git, and using it here keeps the tests' environment the same as
Codex's (no user configuration needed).
"""

from __future__ import annotations

from pathlib import Path

from integrations.git.runner import run_git

IDENTITY = {
    "GIT_AUTHOR_NAME": "Someone Else",
    "GIT_AUTHOR_EMAIL": "someone@example.com",
    "GIT_COMMITTER_NAME": "Someone Else",
    "GIT_COMMITTER_EMAIL": "someone@example.com",
}


def make_remote(folder: Path, name: str = "web.git") -> Path:
    """A bare repository `folder/name` whose main branch has one commit
    (README.md)."""
    folder.mkdir(parents=True, exist_ok=True)
    bare = folder / name
    run_git(["init", "--bare", "--quiet", "--initial-branch=main", str(bare)], folder)
    seed = clone(bare, folder / f"seed-{name}")
    commit_file(seed, "README.md", "hello\n", "initial commit")
    run_git(["push", "--quiet", "origin", "HEAD:refs/heads/main"], seed)
    return bare


def clone(bare: Path, path: Path, branch: str | None = None) -> Path:
    """A working clone of `bare` at `path` (someone else's checkout)."""
    run_git(["init", "--quiet", "--initial-branch=main", str(path)], path.parent)
    run_git(["remote", "add", "origin", str(bare)], path)
    run_git(["fetch", "--quiet", "origin"], path)
    if branch:
        run_git(["checkout", "--quiet", "-B", branch, f"origin/{branch}"], path)
    return path


def commit_file(repo: Path, name: str, text: str, message: str) -> str:
    """Write `name` in `repo` and commit it as someone else; return the sha."""
    (repo / name).write_text(text)
    run_git(["add", name], repo)
    run_git(
        ["-c", "commit.gpgsign=false", "commit", "--quiet", "-m", message],
        repo,
        IDENTITY,
    )
    return run_git(["rev-parse", "HEAD"], repo).strip()


def log(repo: Path, ref: str, fmt: str = "%s") -> list[str]:
    """`git log --format=fmt ref` as lines, newest first."""
    return run_git(["log", f"--format={fmt}", ref], repo).splitlines()
