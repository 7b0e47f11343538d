"""Clean diffs: only what the developer meant to change is committed, and
the roles that only read and check leave the worktree as they found it.

A new file is meant when the developer made it with the file tools
(write_file, move_file: the sandbox's `files_changed`); a new file that
appeared any other way (a scratch script written through the shell, a
reproduction file, build output a .gitignore does not cover) is removed
before a commit, and the developer is told which. Changes to tracked files
stay whatever made them (a formatter run through the shell is a real edit).

The product manager, planner, QA, reviewer and release have no write tools;
their shell could still write, so after their run the worktree is reset to
its commit (tracked files restored, untracked files removed; ignored files
such as caches are left).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from integrations.git import require_worktree, run_git


def untracked_files(worktree: Path) -> list[str]:
    """New files git would add (not ignored), relative to the worktree. A
    worktree deleted under the agent is a retryable failure, never a look
    at whatever repository encloses its folder."""
    require_worktree(worktree)
    out = run_git(["status", "--porcelain", "-z", "--untracked-files=all"], worktree)
    return [entry[3:] for entry in out.split("\0") if entry.startswith("?? ")]


def drop_scratch(worktree: Path, intended: Iterable[str]) -> list[str]:
    """Remove the new files not in `intended`; the removed names."""
    keep = set(intended)
    dropped = []
    for name in untracked_files(worktree):
        if name in keep:
            continue
        # The entry itself (a symlink is removed, never followed).
        (worktree / name).unlink(missing_ok=True)
        dropped.append(name)
    return dropped


def scratch_note(dropped: list[str]) -> str:
    """What the developer is told about removed files ("" when none)."""
    if not dropped:
        return ""
    shown = ", ".join(dropped[:20]) + (" ..." if len(dropped) > 20 else "")
    return (
        f"Not committed and removed (not created with write_file or move_file, "
        f"so taken for scratch): {shown}. Create a file with write_file if it "
        "belongs in the change."
    )


def reset(worktree: Path) -> list[str]:
    """Put the worktree back at its commit; what had changed (git status
    lines), empty when nothing had."""
    require_worktree(worktree)
    status = run_git(["status", "--porcelain", "--untracked-files=all"], worktree)
    changed = [line for line in status.splitlines() if line.strip()]
    if changed:
        run_git(["reset", "--hard", "--quiet", "HEAD"], worktree)
        run_git(["clean", "-fd", "--quiet"], worktree)
    return changed
