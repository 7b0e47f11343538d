"""Mirrors, worktrees and the lookups the other git operations share
(commits.py: commits and pushes; merges.py: the local forge's merges).
Everything runs through `runner.run_git` (no shell, minimal environment,
credentials only in the environment, classified failures).

Layout:

- one bare *mirror* per repository under CODEX_MIRROR_ROOT
  (`<owner>--<name>-<hash>.git`), cloned on the first `ensure_mirror` and
  fetched on every later one. Its remote `origin` fetches into
  `refs/remotes/origin/*`, not `refs/*` as `clone --mirror` would: a fetch
  must never overwrite or prune the local branches the agents' worktrees have
  checked out;
- one *worktree* per agent instance (CODEX_WORKTREE_ROOT/...), on branch
  `codex/<task_id>[-aN]`, created from `origin/<base>`.

Operations that change a mirror's administrative files (creating it, fetching,
adding, removing or pruning worktrees) hold its lock (locks.locked).
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol

from django.conf import settings

from codex.core.errors import (
    NO_RESPONSE,
    Action,
    ClassifiedFailure,
    make_error,
)
from integrations.git.config_guard import scrub_local_config
from integrations.git.locks import LOCK_FILE, locked
from integrations.git.runner import SOURCE, URL_USERINFO, git, run_git

logger = logging.getLogger(__name__)

BRANCH_PREFIX = "codex/"
# Fetches into a mirror run again when a ref they update was locked by another
# git (runner.git's busy_tries).
FETCH_TRIES = 3

SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")
TASK_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


class MirroredRepository(Protocol):
    """What a mirror is named after: the repository's URL and its owner/name
    (the domain's registered repository is one)."""

    @property
    def url(self) -> str:
        """The repository's URL, as registered."""
        ...

    @property
    def full_name(self) -> str:
        """`owner/name`, for a readable folder name."""
        ...


def git_failure(action: Action, message: str) -> ClassifiedFailure:
    """A ClassifiedFailure of git raised by these operations themselves."""
    return make_error(SOURCE, NO_RESPONSE, action, message).exception()


def identity_env() -> dict[str, str]:
    """The author and committer identity of every commit Codex makes; given
    explicitly so that no machine's own git configuration is needed."""
    name = settings.CODEX_GIT_AUTHOR_NAME
    email = settings.CODEX_GIT_AUTHOR_EMAIL
    return {
        "GIT_AUTHOR_NAME": name,
        "GIT_AUTHOR_EMAIL": email,
        "GIT_COMMITTER_NAME": name,
        "GIT_COMMITTER_EMAIL": email,
    }


# -- names and lookups --------------------------------------------------------


def branch_name(task_id: str, agent_number: int | None = None) -> str:
    """The branch of a task's work: `codex/<task_id>`, or `codex/<task_id>-aN`
    for the N-th of several coding agents on one task."""
    if not TASK_ID.match(task_id or ""):
        raise ValueError(f"not usable in a branch name: {task_id!r}")
    if agent_number is None:
        return f"{BRANCH_PREFIX}{task_id}"
    if agent_number < 1:
        raise ValueError("agent numbers start at 1")
    return f"{BRANCH_PREFIX}{task_id}-a{agent_number}"


def mirror_path(repository: MirroredRepository) -> Path:
    """Where `repository`'s mirror lives: readable name, plus a hash of the URL
    so that two repositories whose names slug alike never share a mirror."""
    digest = hashlib.sha256(repository.url.encode()).hexdigest()[:10]
    name = SAFE_NAME.sub("-", repository.full_name.replace("/", "--")).strip("-.")
    return Path(settings.CODEX_MIRROR_ROOT).absolute() / f"{name}-{digest}.git"


def ref_sha(repo: str | os.PathLike[str], ref: str) -> str | None:
    """The commit `ref` (a ref, branch or sha) points at in `repo`, or None
    when there is no such commit."""
    result = git(
        ["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], repo, check=False
    )
    if result.returncode == 0:
        return result.stdout.strip()
    if result.returncode == 1:  # --verify --quiet: "no such revision"
        return None
    # Not a repository, or worse: that is a failure, not an absent ref.
    git(["rev-parse", "--git-dir"], repo)
    return None


def branch_sha(repo: str | os.PathLike[str], branch: str) -> str | None:
    """The commit local branch `branch` of `repo` points at, or None."""
    return ref_sha(repo, f"refs/heads/{branch}")


def head_sha(worktree: str | os.PathLike[str]) -> str:
    """The commit checked out in `worktree`."""
    return run_git(["rev-parse", "HEAD"], worktree).strip()


# A line of `git cat-file --batch`: the object found, or the name asked for
# and why it is not there.
BATCH_HEADER = re.compile(r"^(?P<sha>[0-9a-f]{40,64}) (?P<type>[a-z]+) (?P<size>\d+)$")


def read_blobs(
    repo: str | os.PathLike[str], commit: str, paths: Sequence[str]
) -> dict[str, str | None]:
    """The files `paths` at `commit`, read with one `git cat-file --batch`
    (one git process however many files): path → text, or None when there is
    no such path at `commit`.

    Only what was read exactly is answered (a submodule, whose commit is not
    in the repository, is None): every path is left out when git's output is
    not all UTF-8 (a file that is not, a folder's listing), since the sizes
    git gives are in bytes and the decoded text has lost them. The caller
    reads those one by one. A git failure raises."""
    asked = [path for path in paths if "\n" not in path]
    if not asked:
        return {}
    names = "".join(f"{commit}:{path}\n" for path in asked)
    output = git(["cat-file", "--batch"], repo, input=names).stdout
    if "\ufffd" in output:
        return {}  # bytes that are no UTF-8 were replaced: sizes do not fit
    data, position, found = output.encode("utf-8"), 0, {}
    for path in asked:
        end = data.find(b"\n", position)
        if end < 0:
            return {}
        header = data[position:end].decode("utf-8")
        position = end + 1
        match = BATCH_HEADER.match(header)
        if match is None:
            if header != f"{commit}:{path} missing":
                return {}  # not what git answers for this name: trust nothing
            found[path] = None
            continue
        size = int(match["size"])
        content = data[position : position + size]
        if len(content) != size or data[position + size : position + size + 1] != b"\n":
            return {}
        position += size + 1
        if match["type"] == "blob":
            found[path] = content.decode("utf-8")
    return found


# -- mirrors ------------------------------------------------------------------


def ensure_mirror(
    repository: MirroredRepository,
    remote_url: str,
    env: Mapping[str, str] | None = None,
) -> Path:
    """The bare mirror of `repository`, cloned from `remote_url` (credentials
    in `env`, never in the URL) on first use and fetched on every later call."""
    if URL_USERINFO.search(remote_url):
        raise ValueError("the remote URL must not contain credentials")
    mirror = mirror_path(repository)
    with locked(mirror):
        if not _is_repository(mirror):
            _clone(mirror, remote_url, env)
            _remotes_checked[mirror] = remote_url
            scrub_local_config(mirror)
            return mirror
        # Only Codex configures its mirrors: a remote this process set or
        # checked is still right, so a step does not ask git again.
        if _remotes_checked.get(mirror) != remote_url:
            _remotes_checked.pop(mirror, None)
            _set_remote(mirror, remote_url)
            _remotes_checked[mirror] = remote_url
        # Before any git that could act on it: no setting that runs a program.
        scrub_local_config(mirror)
        # A push from a worktree updates its remote-tracking ref meanwhile,
        # outside this lock: a collision on that ref is retried at once.
        git(
            ["fetch", "--prune", "--quiet", "origin"],
            mirror,
            env,
            busy_tries=FETCH_TRIES,
        )
    return mirror


# Where a mirror's first clone is made, inside the mirror's folder (which
# already holds the lock, so git cannot clone into it): moved up when done.
CLONING = "codex-clone"
ORIGIN_REFSPEC = "+refs/heads/*:refs/remotes/origin/*"


def _clone(mirror: Path, remote_url: str, env: Mapping[str, str] | None) -> None:
    """Make `mirror` a bare clone of `remote_url` in the mirror layout (the
    remote's branches under refs/remotes/origin/, no local branch).

    A clone rather than `init` and `fetch`: `git clone` knows the pack it
    received is all there is and skips the walk over every object that a
    fetch into an empty repository makes to check it is complete (seconds on
    a long history, bench/git_steps.py). What an earlier creation stopped
    half-way left in the folder (it has no HEAD: no repository) goes first.
    """
    for leftover in mirror.iterdir():
        if leftover.name == LOCK_FILE:
            continue
        if leftover.is_dir() and not leftover.is_symlink():
            shutil.rmtree(leftover)
        else:
            leftover.unlink()
    staging = mirror / CLONING
    try:
        git(
            ["clone", "--bare", "--quiet", "--no-local"]
            + ["-c", f"remote.origin.fetch={ORIGIN_REFSPEC}", remote_url, staging],
            mirror,
            env,
        )
        # A bare clone also makes a local branch of every remote one; a
        # mirror's local branches are its worktrees' alone (module docstring).
        heads = run_git(
            ["for-each-ref", "--format=delete %(refname)", "refs/heads/"], staging
        )
        if heads.strip():
            git(["update-ref", "--stdin"], staging, input=heads)
        # HEAD last: the folder is a repository (_is_repository) once whole.
        for entry in sorted(staging.iterdir(), key=lambda e: e.name == "HEAD"):
            entry.rename(mirror / entry.name)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


# mirror → the origin URL this process set or found there (ensure_mirror).
_remotes_checked: dict[Path, str] = {}


def _set_remote(mirror: Path, remote_url: str) -> None:
    current = git(["config", "--get", "remote.origin.url"], mirror, check=False)
    if current.returncode != 0:
        run_git(["remote", "add", "origin", remote_url], mirror)
    elif current.stdout.strip() != remote_url:
        run_git(["remote", "set-url", "origin", remote_url], mirror)


def _is_repository(folder: Path) -> bool:
    """Whether `folder` is already a bare repository (not just our lock file)."""
    return (folder / "HEAD").exists()


# -- worktrees ----------------------------------------------------------------


def registered_worktrees(mirror: Path) -> dict[Path, str | None]:
    """The worktrees registered in `mirror`: path → branch (None if detached)."""
    listing = run_git(["worktree", "list", "--porcelain"], mirror)
    found: dict[Path, str | None] = {}
    path: Path | None = None
    for line in listing.splitlines():
        if line.startswith("worktree "):
            path = Path(line.removeprefix("worktree ")).resolve()
            found[path] = None
        elif line.startswith("branch ") and path is not None:
            found[path] = line.removeprefix("branch refs/heads/")
    return found


def add_worktree(
    mirror: str | os.PathLike[str],
    path: str | os.PathLike[str],
    branch: str,
    base: str,
) -> Path:
    """A worktree of `mirror` at `path` on `branch`, made from `base` (the
    remote's branch of that name, else a local branch or a commit).

    Idempotent: an existing worktree at `path` on `branch` is returned as is; a
    branch that already exists (locally, or on the remote after an earlier
    attempt pushed it) is checked out rather than made again from `base`.
    """
    mirror = Path(mirror).absolute()
    target = Path(path).absolute()
    with locked(mirror):
        if _checked_out_branch(mirror, target) == branch:
            return target  # every step after the first: no git needed
        # Entries whose folder was deleted would block the path and the branch.
        run_git(["worktree", "prune"], mirror)
        existing = registered_worktrees(mirror)
        if target.resolve() in existing:
            checked_out = existing[target.resolve()]
            if checked_out != branch:
                raise git_failure(
                    Action.ABORT,
                    f"{target} is already a worktree on {checked_out or 'no branch'}"
                    f", not {branch}",
                )
            return target
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.exists():
            _set_aside(target)
        if branch_sha(mirror, branch):
            run_git(["worktree", "add", "--quiet", str(target), branch], mirror)
            return target
        start = ref_sha(mirror, f"refs/remotes/origin/{branch}")
        if start is None:
            start = _resolve_base(mirror, base)
        run_git(
            # --no-track: an upstream of origin/main would make a plain
            # `git pull`/`git push` in the worktree go to the base branch.
            ["worktree", "add", "--quiet", "--no-track", "-b", branch]
            + [str(target), start],
            mirror,
        )
    return target


def _checked_out_branch(mirror: Path, target: Path) -> str | None:
    """The branch checked out in `target` when it is a registered worktree of
    `mirror`, read from git's administrative files (its `.git` link, the
    mirror's worktrees/<name>/gitdir pointing back at it, and that folder's
    HEAD) without starting git. None when any of that is missing or does not
    match, or HEAD is detached: the caller then asks git."""
    link = target / ".git"
    try:
        pointer = link.read_text(encoding="utf-8").strip()
    except OSError:
        return None
    if not pointer.startswith("gitdir: "):
        return None
    admin = (target / pointer.removeprefix("gitdir: ")).resolve()
    if admin.parent != (mirror / "worktrees").resolve():
        return None
    try:
        back = (admin / "gitdir").read_text(encoding="utf-8").strip()
        head = (admin / "HEAD").read_text(encoding="utf-8").strip()
    except OSError:
        return None
    if (admin / back).resolve() != link.resolve():
        return None
    if not head.startswith("ref: refs/heads/"):
        return None
    return head.removeprefix("ref: refs/heads/")


def _set_aside(target: Path) -> Path:
    """Move a folder that is in the worktree's place but is no worktree of the
    mirror (its git link was deleted; a tool wrote into the empty path since)
    out of the way, to `<name>.orphan-<n>`: kept for a person to look at, and
    removed later by the orphan reaper like any folder no task owns."""
    for number in range(1, 1000):
        aside = target.with_name(f"{target.name}.orphan-{number}")
        if not aside.exists():
            target.rename(aside)
            logger.warning("%s was no worktree any more: moved to %s", target, aside)
            return aside
    raise git_failure(Action.MANUAL_REVIEW, f"{target} is in the way of a worktree")


def require_worktree(worktree: str | os.PathLike[str]) -> Path:
    """`worktree`, if it is still a git worktree (its `.git` link is there).

    A worktree deleted under a running agent (by a person, a reaper, a full
    disk's clean-up) fails with wait_retry: the next step recreates it from
    the branch. Without this check git would look for a repository in the
    parent folders, and `git add --all` could stage files of whatever
    repository encloses CODEX_WORKTREE_ROOT.
    """
    path = Path(worktree)
    if not (path / ".git").exists():
        raise git_failure(
            Action.WAIT_RETRY,
            f"the worktree {path} is gone - the next step recreates it from the "
            "pushed branch; uncommitted changes in it are lost",
        )
    return path


def fast_forward(worktree: str | os.PathLike[str], branch: str) -> str:
    """Bring the worktree up to origin's `branch` when someone pushed to it
    on top of our commits (the mirror was just fetched): a fast-forward only,
    so that nothing of ours is ever dropped. Local commits the remote lacks,
    or a worktree git cannot fast-forward (files in the way), are left as
    they are: the next push rebases them. Returns the worktree's HEAD."""
    require_worktree(worktree)
    current, remote = _head_and_ref(worktree, f"refs/remotes/origin/{branch}")
    if remote is None or remote == current:
        return current
    behind = git(
        ["merge-base", "--is-ancestor", current, remote], worktree, check=False
    )
    if behind.returncode != 0:
        return current
    moved = git(["merge", "--ff-only", "--quiet", remote], worktree, check=False)
    if moved.returncode != 0:
        logger.warning(
            "could not fast-forward %s to origin/%s: %s", worktree, branch, moved.stderr
        )
    return head_sha(worktree)


def _head_and_ref(worktree: str | os.PathLike[str], ref: str) -> tuple[str, str | None]:
    """The worktree's HEAD commit and the commit full ref name `ref` points
    at (None when there is no such ref), with one git process."""
    listing = git(["show-ref", "--head", ref], worktree, check=False)
    found: dict[str, str] = {}
    for line in listing.stdout.splitlines():
        sha, _, name = line.partition(" ")
        found[name] = sha  # a pattern also matches longer names: exact ones only
    if listing.returncode != 0 or "HEAD" not in found:
        return head_sha(worktree), ref_sha(worktree, ref)
    return found["HEAD"], found.get(ref)


def _resolve_base(mirror: Path, base: str) -> str:
    """The commit a new branch starts from: the remote's `base`, else a local
    branch or revision called `base`."""
    for ref in (f"refs/remotes/origin/{base}", f"refs/heads/{base}", base):
        sha = ref_sha(mirror, ref)
        if sha:
            return sha
    raise git_failure(Action.ABORT, f"base {base!r} not found in {mirror.name}")


def remove_worktree(
    mirror: str | os.PathLike[str],
    path: str | os.PathLike[str],
    *,
    delete_branch: bool = False,
) -> bool:
    """Remove the worktree at `path` from `mirror`, with any uncommitted work in
    it (its agent is finished or dead), and optionally its local branch.

    Idempotent; returns whether there was a worktree to remove. A folder at
    `path` that is not a worktree of `mirror` is left alone: it is not ours.
    """
    mirror = Path(mirror).absolute()
    target = Path(path).absolute().resolve()
    with locked(mirror):
        existing = registered_worktrees(mirror)
        if target not in existing:
            run_git(["worktree", "prune"], mirror)
            return False
        branch = existing[target]
        if target.exists():
            # Twice --force: also removes a worktree someone locked.
            git(["worktree", "remove", "--force", "--force", str(target)], mirror)
            # What git could not delete (files it does not know) goes too.
            shutil.rmtree(target, ignore_errors=True)
        run_git(["worktree", "prune"], mirror)
        if delete_branch and branch:
            git(["branch", "--quiet", "-D", branch], mirror, check=False)
    return True


def prune_worktrees(mirror: str | os.PathLike[str]) -> None:
    """Forget the worktrees of `mirror` whose folders are gone (deleted by the
    orphan reaper, or by hand), which frees their paths and branches."""
    mirror = Path(mirror).absolute()
    with locked(mirror):
        run_git(["worktree", "prune"], mirror)


def prune_all_mirrors(root: str | os.PathLike[str] | None = None) -> list[Path]:
    """`prune_worktrees` on every mirror under `root` (CODEX_MIRROR_ROOT); a
    mirror that fails is logged and skipped. Returns the mirrors pruned."""
    folder = Path(root or settings.CODEX_MIRROR_ROOT)
    if not folder.is_dir():
        return []
    pruned: list[Path] = []
    for mirror in sorted(folder.glob("*.git")):
        if not _is_repository(mirror):
            continue
        try:
            prune_worktrees(mirror)
        except ClassifiedFailure as failure:
            logger.warning("could not prune worktrees of %s: %s", mirror, failure)
            continue
        pruned.append(mirror)
    return pruned
