"""A worktree's disk quota, for the command jail: its repository's
`worktree_quota_mb` (docs/jail.md). The jail knows no models, so this app
registers the lookup with it when it is ready."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings

from codex.repositories.models import Repository
from integrations.git.repository import mirror_path


def worktree_quota_mb(worktree: Path) -> int | None:
    """The quota of the repository whose mirror `worktree` is a worktree of
    (its `.git` file names the mirror); None for any other folder."""
    mirror = _mirror_of(Path(worktree))
    if mirror is None:
        return None
    # Callers that know the repository pass its quota to the jail; this is
    # the fallback, so it reads only the columns a mirror's name comes from.
    candidates = Repository.objects.only("url", "forge", "worktree_quota_mb")
    for repository in candidates.iterator():
        path = mirror_path(repository)
        if path.name == mirror.name and path.resolve() == mirror:
            return repository.worktree_quota_mb
    return None


def _mirror_of(worktree: Path) -> Path | None:
    """The mirror a linked worktree belongs to: `.git` reads "gitdir:
    <mirror>/worktrees/<name>". Only mirrors under CODEX_MIRROR_ROOT count."""
    try:
        text = (worktree / ".git").read_text(errors="replace")[:4096]
    except OSError:  # no .git file (a folder, or nothing): not a task's worktree
        return None
    if not text.startswith("gitdir:"):
        return None
    gitdir = Path(text.removeprefix("gitdir:").strip())
    if not gitdir.is_absolute():
        gitdir = worktree / gitdir
    gitdir = gitdir.resolve()
    if gitdir.parent.name != "worktrees":
        return None
    mirror = gitdir.parent.parent
    if not mirror.is_relative_to(Path(settings.CODEX_MIRROR_ROOT).resolve()):
        return None
    return mirror
