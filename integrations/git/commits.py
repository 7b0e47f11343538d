"""Commits and pushes in a task's worktree: every change committed as Codex
with the task's trailers, the recovery points read back from them, and pushes
that pull and rebase when someone else pushed first (never a force push).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import tempfile
from collections.abc import Iterator, Mapping

from codex.core.errors import (
    NO_RESPONSE,
    Action,
    ClassifiedFailure,
    ErrorKind,
    classify_kind,
    make_error,
)
from integrations.git.repository import head_sha, identity_env, require_worktree
from integrations.git.runner import SOURCE, classify_stderr, git, run_git

logger = logging.getLogger(__name__)

TRAILER = "Codex-Task"
# The tasks.md item a commit completes (the developer's recovery point).
STEP_TRAILER = "Codex-Step"
TRAILER_KEY = re.compile(r"^[A-Za-z][A-Za-z0-9-]*$")
# Pushes retried after a non-fast-forward: each retry fetches and rebases, so a
# third rejection means someone pushes to the branch continuously; a person (or
# the worker's own pull_retry) decides then.
PUSH_TRIES = 3


@contextlib.contextmanager
def message_file(message: str) -> Iterator[str]:
    """`message` in a temporary file: given to git with -F, so that neither its
    length nor its content (an agent wrote it) matters on the command line."""
    descriptor, name = tempfile.mkstemp(prefix="codex-msg-", suffix=".txt")
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(message)
        yield name
    finally:
        os.unlink(name)


def commit_all(
    worktree: str | os.PathLike[str],
    message: str,
    task_id: str,
    *,
    trailers: Mapping[str, str] | None = None,
) -> str | None:
    """Commit every change in `worktree` (new, changed, deleted files) as
    CODEX_GIT_AUTHOR_NAME/EMAIL with a `Codex-Task: <task_id>` trailer and
    any further `trailers` (e.g. {STEP_TRAILER: "T001"}).

    Returns the new commit's sha, or None when nothing changed.
    """
    if not message.strip():
        raise ValueError("a commit needs a message")
    extra: list[str] = []
    for key, value in (trailers or {}).items():
        if not TRAILER_KEY.match(key) or not value or "\n" in value:
            raise ValueError(f"bad commit trailer {key!r}: {value!r}")
        extra += ["--trailer", f"{key}: {value}"]
    require_worktree(worktree)
    run_git(["add", "--all"], worktree)
    # Once everything is staged, whether there is anything to commit is the
    # index against HEAD: `git status` would walk and stat the whole tree
    # again, as `add` just did (half a second on 100,000 files and most of
    # the step's cost over bare git's, bench/git_steps.py).
    staged = git(["diff", "--cached", "--quiet"], worktree, check=False)
    if staged.returncode == 0:
        return None
    if staged.returncode != 1:
        raise classify_stderr(
            ["diff", "--cached", "--quiet"], staged.returncode, staged.stderr
        )
    with message_file(message) as path:
        run_git(
            # --no-verify and no signing: the commit must not depend on hooks or
            # keys of whatever machine the worker runs on.
            ["-c", "commit.gpgsign=false", "commit", "--quiet", "--no-verify"]
            + ["-F", path, "--trailer", f"{TRAILER}: {task_id}", *extra],
            worktree,
            identity_env(),
        )
    return head_sha(worktree)


def committed_steps(
    worktree: str | os.PathLike[str], base: str, task_id: str
) -> dict[str, str]:
    """The steps (tasks.md items) committed on the worktree's branch since
    `base`, oldest first: {step: sha} from the `Codex-Step` trailers of the
    commits carrying `Codex-Task: <task_id>`. A step committed twice keeps
    its first commit. The recovery points of a developer's work."""
    log = run_git(
        [
            "log",
            "--reverse",
            "--format=%H%x1f%(trailers:key=Codex-Task,valueonly,separator=%x2c)"
            "%x1f%(trailers:key=Codex-Step,valueonly,separator=%x2c)%x1e",
            f"{base}..HEAD",
        ],
        worktree,
    )
    steps: dict[str, str] = {}
    for entry in log.split("\x1e"):
        fields = entry.strip().split("\x1f")
        if len(fields) != 3:
            continue
        sha, tasks, step_names = (field.strip() for field in fields)
        if task_id not in {name.strip() for name in tasks.split(",")}:
            continue
        for step in step_names.split(","):
            if step.strip():
                steps.setdefault(step.strip(), sha)
    return steps


def push(
    worktree: str | os.PathLike[str],
    branch: str,
    env: Mapping[str, str] | None = None,
    *,
    tries: int = PUSH_TRIES,
) -> str:
    """Push the worktree's HEAD to `branch` on origin; return the pushed sha.

    A non-fast-forward rejection (someone pushed to the branch meanwhile) is
    handled by pulling: fetch the branch, rebase onto it, push again, at most
    `tries` pushes in all; still rejected → the pull_retry failure is raised.
    Nothing is ever force-pushed: the other commits stay. A rebase conflict →
    manual_review, with the worktree left as before it and our commits pushed
    to a branch of their own (`<branch>-unmerged-<sha>`, named in the
    message), so that the person who resolves it has them on the remote.
    """
    require_worktree(worktree)
    for attempt in range(1, tries + 1):
        try:
            run_git(
                ["push", "--quiet", "origin", f"HEAD:refs/heads/{branch}"],
                worktree,
                env,
            )
            return head_sha(worktree)
        except ClassifiedFailure as failure:
            if failure.action != Action.PULL_RETRY or attempt == tries:
                raise
            logger.info("push of %s rejected (attempt %s): pulling", branch, attempt)
        try:
            _pull_rebase(worktree, branch, env)
        except ClassifiedFailure as failure:
            if failure.action != Action.MANUAL_REVIEW:
                raise
            raise _kept_aside(worktree, branch, env, failure) from failure
    raise AssertionError("unreachable")  # pragma: no cover


def _kept_aside(
    worktree: str | os.PathLike[str],
    branch: str,
    env: Mapping[str, str] | None,
    failure: ClassifiedFailure,
) -> ClassifiedFailure:
    """Push our commits, which do not rebase cleanly onto someone else's push
    to `branch`, to a new branch beside it; the manual_review failure to raise,
    naming both branches."""
    sha = head_sha(worktree)
    aside = f"{branch}-unmerged-{sha[:12]}"
    kept = git(
        ["push", "--quiet", "origin", f"HEAD:refs/heads/{aside}"],
        worktree,
        env,
        check=False,
    )
    where = (
        f"our commits are on {aside}"
        if kept.returncode == 0
        else f"our commits ({sha[:12]}) are only in the worktree: pushing them "
        f"to {aside} failed too"
    )
    return make_error(
        SOURCE,
        NO_RESPONSE,
        Action.MANUAL_REVIEW,
        f"someone else pushed to {branch} and our commits do not rebase onto "
        f"theirs - {where}; a person merges the two ({failure.error.message})",
        original=failure,
    ).exception()


def _pull_rebase(
    worktree: str | os.PathLike[str], branch: str, env: Mapping[str, str] | None
) -> None:
    """Fetch origin's `branch` and rebase the worktree's commits onto it."""
    tracking = f"refs/remotes/origin/{branch}"
    run_git(
        ["fetch", "--quiet", "origin", f"+refs/heads/{branch}:{tracking}"],
        worktree,
        env,
    )
    try:
        run_git(["rebase", "--quiet", tracking], worktree, identity_env())
    except ClassifiedFailure as failure:
        # Leave the worktree on its own commits, not mid-rebase.
        git(["rebase", "--abort"], worktree, check=False)
        if failure.action == Action.MANUAL_REVIEW:
            raise
        raise classify_kind(
            SOURCE,
            ErrorKind.MERGE_CONFLICT,
            message=f"rebase onto origin/{branch} failed: {failure.error.message}",
            original=failure,
        ).exception() from failure
