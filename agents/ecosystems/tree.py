"""The files detection reads: tracked files at one commit, read from git's
objects rather than the worktree.

A repository's manifests are attacker-controlled. Reading them through git
means a symlink committed as `package.json` is never followed (only regular
files are read), nothing an earlier command left in the worktree counts, and
every read is capped in size before it happens (ls-tree gives the size).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from integrations.git import read_refs, run_git

MAX_READ_BYTES = 1_000_000
# A path spliced into a command: plain characters only, no option look-alike.
SAFE_PATH = re.compile(r"^[A-Za-z0-9_.][A-Za-z0-9._+@/-]*$")
REGULAR_MODES = ("100644", "100755")


def safe_path(path: str) -> bool:
    """Whether `path` may go into a command line as it is: relative, plain
    characters, no `..` and no part starting with `-`."""
    parts = path.split("/")
    return bool(SAFE_PATH.match(path)) and not any(
        part in ("", ".", "..") or part.startswith("-") for part in parts
    )


@dataclass(frozen=True)
class Entry:
    """One tracked file: its mode, blob id and size."""

    mode: str
    blob: str
    size: int

    @property
    def regular(self) -> bool:
        return self.mode in REGULAR_MODES


@dataclass
class Tree:
    """The tracked files of `worktree` at `commit` that detection looks at:
    the top folder, and the folders named in `folders` (recursively)."""

    worktree: Path
    commit: str
    entries: dict[str, Entry] = field(default_factory=dict)

    @classmethod
    def at(
        cls,
        worktree: Path,
        commit: str = "HEAD",
        folders: tuple[str, ...] = (),
        paths: tuple[str, ...] = (),
    ) -> Tree:
        """The top folder, `folders` with everything under them, and the
        files `paths` name (where they exist)."""
        # HEAD is read from git's files when they are plain (every step
        # detects again: one git fewer); anything else git resolves.
        found = read_refs(worktree, ["HEAD"]) if commit == "HEAD" else None
        sha = (
            found[0]
            if found
            else run_git(["rev-parse", "--verify", f"{commit}^{{commit}}"], worktree)
        )
        tree = cls(Path(worktree), sha.strip())
        tree._list(["ls-tree", "-l", "-z", tree.commit])
        present = [f for f in folders if f in tree.dirs]
        if present:
            tree._list(["ls-tree", "-r", "-l", "-z", tree.commit, "--", *present])
        wanted = [p for p in paths if p.split("/")[0] in tree.dirs]
        if wanted:
            tree._list(["ls-tree", "-l", "-z", tree.commit, "--", *wanted])
        return tree

    @property
    def dirs(self) -> set[str]:
        return {path for path, entry in self.entries.items() if entry.mode == "040000"}

    def _list(self, args: list[str]) -> None:
        for record in run_git(args, self.worktree).split("\0"):
            head, _, path = record.partition("\t")
            parts = head.split()
            if len(parts) != 4 or not path:
                continue
            mode, _kind, blob, size = parts
            self.entries[path] = Entry(mode, blob, int(size) if size.isdigit() else 0)

    def has(self, path: str) -> bool:
        """Whether `path` is a tracked regular file."""
        entry = self.entries.get(path)
        return entry is not None and entry.regular

    def files(self) -> list[str]:
        return sorted(path for path, entry in self.entries.items() if entry.regular)

    def read(self, path: str, limit: int = MAX_READ_BYTES) -> str | None:
        """The text of a tracked regular file, None when it is not one or is
        larger than `limit` bytes."""
        entry = self.entries.get(path)
        if entry is None or not entry.regular or entry.size > limit:
            return None
        return run_git(["cat-file", "blob", entry.blob], self.worktree)

    def blobs(self, paths: list[str]) -> dict[str, str]:
        """The blob ids of the tracked files among `paths`: what they hold,
        hashed by git already (the setup cache's key)."""
        return {p: self.entries[p].blob for p in paths if self.has(p)}


def all_files(worktree: Path, commit: str = "HEAD") -> list[str]:
    """Every tracked path at `commit` (for finding the tests near a change)."""
    listing = run_git(["ls-tree", "-r", "--name-only", "-z", commit], worktree)
    return [path for path in listing.split("\0") if path]
