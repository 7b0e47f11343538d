"""git: the only package that runs git (DESIGN.md, integrations/).

`runner.run_git` starts git (no shell, minimal environment, credentials only
in the environment, a timeout, classified failures); `repository` holds the
operations built on it: mirrors, worktrees, commits, pushes with pull-and-retry,
merges for the local forge.
"""

from integrations.git.repository import (
    STEP_TRAILER,
    add_worktree,
    branch_name,
    branch_sha,
    commit_all,
    committed_steps,
    ensure_mirror,
    fast_forward,
    head_sha,
    merge_into,
    mirror_path,
    prune_all_mirrors,
    prune_worktrees,
    push,
    ref_sha,
    remove_worktree,
    require_worktree,
)
from integrations.git.runner import run_git

__all__ = [
    "STEP_TRAILER",
    "add_worktree",
    "branch_name",
    "branch_sha",
    "commit_all",
    "committed_steps",
    "ensure_mirror",
    "fast_forward",
    "head_sha",
    "merge_into",
    "mirror_path",
    "prune_all_mirrors",
    "prune_worktrees",
    "push",
    "ref_sha",
    "remove_worktree",
    "require_worktree",
    "run_git",
]
