"""Merges into a bare repository, for the local forge: a merge commit, a
squash or a rebase, built in a scratch worktree under the repository's lock
and published with a compare-and-swap of the base branch. And a branch that
merges several heads into a base (`merge_heads`), for a parent's consolidation
pull request.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from codex.core.errors import Action, ErrorKind, classify_kind
from integrations.git.commits import message_file
from integrations.git.locks import locked
from integrations.git.repository import (
    git_failure,
    head_sha,
    identity_env,
    ref_sha,
    registered_worktrees,
)
from integrations.git.runner import SOURCE, git, run_git

logger = logging.getLogger(__name__)

# Merges retried when the base branch moved while the merge was being built.
MERGE_TRIES = 3
MERGE_METHODS = ("merge", "squash", "rebase")
SCRATCH_PREFIX = "codex-merge-"


def _drop_stale_scratch(repo: Path) -> None:
    """Remove the scratch worktrees a merge killed mid-way left registered in
    `repo` (the lock is held, so none is in use). One killed while git was
    adding it has a HEAD naming no commit, and with it registered every later
    push to the repository fails ("bad object worktrees/.../HEAD")."""
    stale = [p for p in registered_worktrees(repo) if p.name.startswith(SCRATCH_PREFIX)]
    for path in stale:
        git(["worktree", "remove", "--force", "--force", str(path)], repo, check=False)
        shutil.rmtree(path, ignore_errors=True)
    if stale:
        git(["worktree", "prune"], repo, check=False)


@contextlib.contextmanager
def _scratch_worktree(repo: Path, start: str) -> Iterator[Path]:
    """A detached worktree of `repo` at `start`, removed afterwards. Call
    with the repository's lock held."""
    _drop_stale_scratch(repo)
    folder = Path(tempfile.mkdtemp(prefix=SCRATCH_PREFIX))
    try:
        run_git(["worktree", "add", "--quiet", "--detach", str(folder), start], repo)
        yield folder
    finally:
        git(
            ["worktree", "remove", "--force", "--force", str(folder)], repo, check=False
        )
        shutil.rmtree(folder, ignore_errors=True)
        git(["worktree", "prune"], repo, check=False)


def merge_into(
    repo: str | os.PathLike[str],
    *,
    base: str,
    head: str,
    method: str = "squash",
    message: str,
    tries: int = MERGE_TRIES,
) -> str:
    """Merge commit `head` into branch `base` of (bare) repository `repo` and
    return the new tip of `base`.

    `method`: "merge" (a merge commit), "squash" (one commit with the changes)
    or "rebase" (head's commits replayed onto base). The result is built in a
    scratch worktree and `base` moved with a compare-and-swap, so a push to
    `base` meanwhile makes the merge start over (at most `tries` times) rather
    than be lost. A conflict raises manual_review and changes nothing.
    """
    if method not in MERGE_METHODS:
        raise ValueError(f"unknown merge method {method!r}")
    repo = Path(repo).absolute()
    ref = f"refs/heads/{base}"
    for _ in range(tries):
        old = ref_sha(repo, ref)
        if old is None:
            raise git_failure(Action.ABORT, f"base branch {base!r} does not exist")
        with locked(repo), _scratch_worktree(repo, old) as scratch:
            new = _build_merge(
                scratch, old=old, head=head, method=method, message=message
            )
        if new == old:
            return old
        moved = git(["update-ref", ref, new, old], repo, check=False)
        if moved.returncode == 0:
            return new
        logger.info("base %s moved during the merge: merging again", base)
    raise classify_kind(
        SOURCE,
        ErrorKind.NON_FAST_FORWARD,
        message=f"{base} kept moving while merging into it",
    ).exception()


def is_ancestor(repo: str | os.PathLike[str], ancestor: str, commit: str) -> bool:
    """Whether `ancestor` is reachable from `commit` in `repo`."""
    result = git(["merge-base", "--is-ancestor", ancestor, commit], repo, check=False)
    return result.returncode == 0


def merge_heads(
    repo: str | os.PathLike[str], *, base: str, heads: list[tuple[str, str]]
) -> str:
    """A commit of `repo` that is `base` with each of `heads` ((sha, merge
    message) pairs) merged into it in order, one merge commit each (the heads
    stay ancestors of the result, so a forge sees each of their pull requests
    merged once it is); returns its sha and moves no ref. Built in a scratch
    worktree under the repository's lock; a conflict raises manual_review and
    leaves nothing."""
    repo = Path(repo).absolute()
    identity = identity_env()
    with locked(repo), _scratch_worktree(repo, base) as scratch:
        for head, message in heads:
            with message_file(message) as path:
                run_git(
                    ["-c", "commit.gpgsign=false", "merge", "--quiet", "--no-ff"]
                    + ["--no-verify", "-F", path, head],
                    scratch,
                    identity,
                )
        return head_sha(scratch)


def _build_merge(
    scratch: Path, *, old: str, head: str, method: str, message: str
) -> str:
    """Make the merge in `scratch` (detached at `old`); return the result."""
    identity = identity_env()
    with message_file(message) as path:
        if method == "merge":
            run_git(
                ["-c", "commit.gpgsign=false", "merge", "--quiet", "--no-ff"]
                + ["--no-verify", "-F", path, head],
                scratch,
                identity,
            )
        elif method == "squash":
            run_git(["merge", "--quiet", "--squash", head], scratch, identity)
            staged = git(["diff", "--cached", "--quiet"], scratch, check=False)
            if staged.returncode != 0:
                run_git(
                    ["-c", "commit.gpgsign=false", "commit", "--quiet"]
                    + ["--no-verify", "-F", path],
                    scratch,
                    identity,
                )
        else:
            run_git(["checkout", "--quiet", "--detach", head], scratch)
            run_git(["rebase", "--quiet", old], scratch, identity)
    return head_sha(scratch)
