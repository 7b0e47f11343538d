"""Small git repositories in a temporary folder for the repository map's
tests: files in, commits out, through integrations.git's runner (the only code
that runs git)."""

from __future__ import annotations

from pathlib import Path

from integrations.git.runner import run_git

IDENTITY = {
    "GIT_AUTHOR_NAME": "Someone",
    "GIT_AUTHOR_EMAIL": "someone@example.com",
    "GIT_COMMITTER_NAME": "Someone",
    "GIT_COMMITTER_EMAIL": "someone@example.com",
}


def make_repository(folder: Path, files: dict[str, str | bytes]) -> tuple[Path, str]:
    """A repository at `folder` whose one commit holds `files`; with its sha."""
    folder.mkdir(parents=True, exist_ok=True)
    run_git(["init", "--quiet", "--initial-branch=main", str(folder)], folder)
    return folder, commit(folder, files)


def commit(repo: Path, files: dict[str, str | bytes], message: str = "change") -> str:
    """Write `files` (paths relative to `repo`) and commit them all."""
    for name, content in files.items():
        path = repo / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
    run_git(["add", "--all"], repo)
    run_git(
        ["-c", "commit.gpgsign=false", "commit", "--quiet", "-m", message],
        repo,
        IDENTITY,
    )
    return run_git(["rev-parse", "HEAD"], repo).strip()
