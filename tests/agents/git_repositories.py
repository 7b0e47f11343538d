"""Small git repositories in a temporary folder for the repository map's
tests: files in, commits out, through integrations.git's runner (the only code
that runs git); and a bound on how long a call may take."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from integrations.git.runner import run_git

T = TypeVar("T")

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


def finished_within(seconds: float, call: Callable[[], T]) -> T:
    """call(), failing the test if it takes longer than `seconds`: a call that
    blocks (an open on a FIFO, a wait on a queue) would otherwise hang the
    suite."""
    result: dict = {}

    def run() -> None:
        try:
            result["value"] = call()
        except BaseException as exc:  # noqa: BLE001 - raised again below
            result["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still running after {seconds} s"
    if "error" in result:
        raise result["error"]
    return result["value"]
