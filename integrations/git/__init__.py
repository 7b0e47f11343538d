"""git: the only package that runs git (docs/architecture.md#integrations).

`runner.run_git` starts git (no shell, minimal environment, credentials only
in the environment, a timeout, classified failures), `streaming.GitStream` a
read-only git whose output is read as it comes (a search); the operations built
on them: `repository` (mirrors, worktrees), `commits` (commits, pushes with
pull-and-retry), `merges` (for the local forge); `locks` (Codex's lock on a git
folder, and the lock files a killed git leaves); `refs` (refs read from git's
files without starting git, where that is plain).
"""

from integrations.git.commits import STEP_TRAILER, commit_all, committed_steps, push
from integrations.git.merges import is_ancestor, merge_heads, merge_into
from integrations.git.refs import read_refs
from integrations.git.repository import (
    add_worktree,
    branch_name,
    branch_sha,
    ensure_mirror,
    fast_forward,
    head_sha,
    mirror_path,
    prune_all_mirrors,
    prune_worktrees,
    read_blobs,
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
    "is_ancestor",
    "merge_heads",
    "merge_into",
    "mirror_path",
    "prune_all_mirrors",
    "prune_worktrees",
    "read_blobs",
    "read_refs",
    "push",
    "ref_sha",
    "remove_worktree",
    "require_worktree",
    "run_git",
]
