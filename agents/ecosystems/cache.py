"""The installed environment, kept per repository and lock-file hash, so
that a new worktree gets a copy instead of installing again
(docs/jail.md#the-setup-cache).

After a setup command succeeds in a fresh worktree, what it made there (the
untracked files and folders: `.venv`, `node_modules`, `.codex-deps`, an
egg-info) is copied to CODEX_SETUP_CACHE_ROOT/<repository>/<key>/. The key
hashes what decides the result: the setup command, its hosts and
variables, the content of the key files (lock files and manifests) at the
commit, the jail's backend, image and PATH, and the toolchains found on it.
The next fresh worktree with the same key gets those files copied in
(`cp --reflink=auto`: free on filesystems that share blocks) and the setup
command does not run.

A copy, never a link or a shared bind: an agent may write anything in its
own worktree, and nothing it writes can reach another task's environment.
Only a setup run on a commit of the default branch fills the cache, so what
a task's branch changes (a build script, a postinstall) never reaches it.
Only jailed commands use it: in the jail every worktree is /workspace, so the
absolute paths inside a venv hold in every copy.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
import stat
import subprocess
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from django.conf import settings

from agents.ecosystems.model import Detection
from agents.ecosystems.tree import safe_path
from codex.core.errors import ClassifiedFailure
from integrations.git import run_git
from integrations.jail import WORKSPACE

if TYPE_CHECKING:
    from codex.repositories.models import Repository
    from integrations.jail import Jail

logger = logging.getLogger(__name__)

ENTRIES = "entries.json"
FILES = "tree"
# Programs whose installed version changes what a setup makes.
TOOLCHAINS = ("python3", "node", "npm", "go", "cargo", "rustc", "uv", "poetry")


def untracked(worktree: Path) -> set[str]:
    """Untracked files and folders of the worktree, ignored ones included
    (a folder as one entry, without its trailing slash)."""
    listing = run_git(["ls-files", "--others", "--directory", "-z"], worktree)
    return {entry.rstrip("/") for entry in listing.split("\0") if entry}


def _fingerprint(jail: Jail) -> list[Any]:
    """Which toolchains commands find, and which build of each."""
    found = []
    for program in TOOLCHAINS:
        inside = jail.which(program)
        # The worktree's own programs (a venv, node_modules/.bin) are what the
        # setup makes or the repository holds: the key files cover them.
        if not inside or not inside.startswith("/") or inside.startswith(WORKSPACE):
            continue
        real = Path(os.path.realpath(inside))
        with contextlib.suppress(OSError):
            info = real.stat()
            found.append([program, str(real), info.st_size, info.st_mtime_ns])
    return found


def _remove(path: Path) -> None:
    """Remove a file or folder, read-only parts too (Go makes its module
    cache read-only)."""

    def writable(function: Any, name: str, _exc: Any) -> None:
        with contextlib.suppress(OSError):
            os.chmod(os.path.dirname(name), stat.S_IRWXU)
            os.chmod(name, stat.S_IRWXU)
            function(name)

    if path.is_symlink() or path.is_file():
        path.unlink(missing_ok=True)
    elif path.exists():
        shutil.rmtree(path, onerror=writable)


def _copy(source: Path, target: Path) -> None:
    """Copy a file or folder as it is (links kept as links, never followed),
    sharing blocks where the filesystem can."""
    subprocess.run(
        ["cp", "-a", "--reflink=auto", "-T", str(source), str(target)],
        check=True,
        capture_output=True,
        timeout=3600,
    )


def _used_at(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:  # removed meanwhile by another worker's prune
        return 0.0


def _valid(entries: Any) -> bool:
    return isinstance(entries, list) and all(
        isinstance(e, str) and safe_path(e) and ".git" not in e.split("/")
        for e in entries
    )


class Setup(Protocol):
    """The setup a cache entry is for (agents.ecosystems.environment's
    Environment)."""

    detection: Detection
    setup_command: str
    setup_hosts: list[str]


class SetupCache:
    """The cache entry of one setup: `key` under `folder` (the repository's)."""

    def __init__(self, folder: Path, key: str, default_branch: str) -> None:
        self.folder = folder
        self.key = key
        self.default_branch = default_branch

    @classmethod
    def for_environment(
        cls, repository: Repository, jail: Jail, environment: Setup
    ) -> SetupCache | None:
        """The cache of this setup, None when it is not cached: no cache
        folder configured, commands not jailed, no setup, or nothing keys it
        (a setup of the repository's own with no ecosystem detected)."""
        root = (getattr(settings, "CODEX_SETUP_CACHE_ROOT", "") or "").strip()
        blobs = environment.detection.key_blobs
        if not root or not jail.jailed or not environment.setup_command or not blobs:
            return None
        material = {
            "repository": repository.url,
            "command": environment.setup_command,
            "hosts": sorted(environment.setup_hosts),
            "env": sorted({**jail.extra_env}.items()),
            "files": sorted(blobs.items()),
            "backend": jail.backend.name,
            "image": jail.image if not jail.backend.supervisor_limits else "",
            "path": jail.path,
            "readonly": [str(p) for p in jail.readonly],
            "toolchains": _fingerprint(jail),
        }
        key = hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()
        return cls(Path(root) / str(repository.pk), key[:32], repository.default_branch)

    @staticmethod
    def untracked(worktree: Path) -> set[str]:
        """What is in the worktree untracked now (see `untracked`)."""
        return untracked(worktree)

    @property
    def entry(self) -> Path:
        return self.folder / self.key

    def restore(self, worktree: Path) -> list[str] | None:
        """Copy the cached files into a fresh `worktree`; the entries copied,
        or None when there is no complete entry or it does not fit (then
        nothing is left behind and the setup runs)."""
        try:
            entries = json.loads((self.entry / ENTRIES).read_text())
        except (OSError, ValueError):
            return None
        if not _valid(entries):
            return None
        for name in entries:
            target = worktree / name
            if target.exists() or target.is_symlink() or not target.parent.is_dir():
                return None
        copied: list[Path] = []
        try:
            for name in entries:
                copied.append(worktree / name)
                _copy(self.entry / FILES / name, worktree / name)
        except (OSError, subprocess.SubprocessError) as exc:
            logger.warning("the setup cache %s could not be copied: %s", self.key, exc)
            for path in copied:
                _remove(path)
            return None
        with contextlib.suppress(OSError):
            os.utime(self.entry)  # recently used: kept longest
        return entries

    def store(self, worktree: Path, before: set[str]) -> None:
        """Keep what the setup made in `worktree` (the untracked entries not
        there `before` it ran), when HEAD is on the default branch. Never
        fails the setup: a problem is logged and the cache stays as it was."""
        if self.entry.exists() or not self._on_default_branch(worktree):
            return
        made = sorted(untracked(worktree) - before)
        if not _valid(made):
            logger.warning("the setup made paths the cache does not keep: %s", made)
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        staging = self.folder / f".tmp-{uuid.uuid4().hex}"
        try:
            for name in made:
                (staging / FILES / name).parent.mkdir(parents=True, exist_ok=True)
                _copy(worktree / name, staging / FILES / name)
            (staging / ENTRIES).write_text(json.dumps(made))
            # Whole or not at all: another worker may be storing the same key.
            os.rename(staging, self.entry)
        except (OSError, subprocess.SubprocessError) as exc:
            logger.warning("the setup cache %s was not stored: %s", self.key, exc)
        finally:
            _remove(staging)
        self.prune()

    def prune(self) -> None:
        """Keep the CODEX_SETUP_CACHE_KEEP most recently used entries."""
        keep = int(getattr(settings, "CODEX_SETUP_CACHE_KEEP", 3) or 1)
        entries = [p for p in self.folder.iterdir() if not p.name.startswith(".")]
        entries.sort(key=_used_at, reverse=True)
        for old in entries[keep:]:
            _remove(old)

    def _on_default_branch(self, worktree: Path) -> bool:
        try:
            base = f"origin/{self.default_branch}"
            run_git(["merge-base", "--is-ancestor", "HEAD", base], worktree)
        except ClassifiedFailure:
            return False
        return True
