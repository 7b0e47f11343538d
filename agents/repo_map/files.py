"""Which files of a commit the map reads, and reading them from the worktree.

The list comes from the commit itself (`git ls-tree`): tracked files only,
with the blob id of each, which names its content for the tag cache. A file is
read from the worktree only when its tags are not cached yet, and only if it
is a regular file reached without following a symlink (every folder on the
way is opened with O_NOFOLLOW, one at a time), so a link pointing out of the
worktree, a FIFO or a device put where a tracked file was is never opened.
What was read is hashed as git would: content that is not the commit's blob
(an edited worktree) is not cached under the commit's name.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import NamedTuple

from agents.repo_map.languages import language_for
from integrations.git import run_git

# Larger files are skipped: generated code, data or bundles, whose outline
# would not help and whose parse would take the time of thousands of files.
MAX_FILE_BYTES = 256_000
# Lines this long on average mean minified or generated code.
MAX_MEAN_LINE_CHARS = 300
GENERATED = re.compile(
    rb"Code generated .{0,200}DO NOT EDIT|@generated"
    rb"|(?i:this file (?:is|was|has been) (?:automatically |auto-?)generated)"
)
# Why a file was not read (read_files).
MISSING = "missing, not a regular file, or behind a symlink"
TOO_LARGE = "too large"
FULL_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_OPEN_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_OPEN_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


class Entry(NamedTuple):
    path: str
    blob: str
    language: str


def resolve_commit(worktree: Path, revision: str) -> str:
    """The full id of `revision`'s commit (a full id is taken as it is)."""
    if FULL_SHA.fullmatch(revision):
        return revision
    return run_git(
        ["rev-parse", "--verify", "--end-of-options", f"{revision}^{{commit}}"],
        worktree,
    ).strip()


def source_files(worktree: Path, commit: str) -> list[Entry]:
    """The commit's files in a language of the map, in path order: regular
    files only (no symlinks, no submodules), vendored and generated code left
    out by name."""
    listing = run_git(["ls-tree", "-r", "-z", "--full-tree", commit], worktree)
    entries = []
    for record in listing.split("\0"):
        head, _, path = record.partition("\t")
        if not path or not head.startswith("100"):  # 100644 and 100755
            continue
        language = language_for(path)
        if language is not None:
            entries.append(Entry(path, head.rsplit(" ", 1)[-1], language))
    return entries


def blob_id(data: bytes, like: str) -> str:
    """git's id of a blob holding `data`, in the hash of `like` (SHA-1 or
    SHA-256 repositories)."""
    digest = hashlib.sha256 if len(like) == 64 else hashlib.sha1
    return digest(b"blob %d\0" % len(data) + data).hexdigest()


def looks_generated(data: bytes) -> bool:
    """A generated-code marker near the top, or minified code."""
    head = data[:1000]
    # A cheap test first: the pattern runs only where the word is.
    if b"enerated" in head.lower() and GENERATED.search(head):
        return True
    return len(data) > 2000 and len(data) / (data.count(b"\n") + 1) > (
        MAX_MEAN_LINE_CHARS
    )


def read_files(
    worktree: Path, paths: Iterable[str], limit: int = MAX_FILE_BYTES
) -> Iterator[tuple[str, bytes | str]]:
    """(path, content) for each of `paths` (relative, best in sorted order:
    each folder is then opened once), or (path, why not): MISSING for a file
    that is not there, not a regular file or behind a symlink, TOO_LARGE for
    one over `limit` bytes."""
    root = os.open(worktree, _OPEN_FOLDER & ~os.O_NOFOLLOW)
    folders = _Folders(root)
    try:
        for path in paths:
            *parents, name = path.split("/")
            if any(part in ("", ".", "..", ".git") for part in (*parents, name)):
                yield path, MISSING
                continue
            folder = folders.enter(parents)
            yield path, MISSING if folder is None else _read(folder, name, limit)
    finally:
        folders.close()
        os.close(root)


def _read(folder: int, name: str, limit: int) -> bytes | str:
    try:
        before = os.stat(name, dir_fd=folder, follow_symlinks=False)
        if not stat.S_ISREG(before.st_mode):
            return MISSING
        if before.st_size > limit:
            return TOO_LARGE
        fd = os.open(name, _OPEN_FILE, dir_fd=folder)
    except OSError:
        return MISSING
    try:
        after = os.fstat(fd)
        # Swapped for something else between the two looks: not read.
        if not stat.S_ISREG(after.st_mode) or after.st_ino != before.st_ino:
            return MISSING
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, limit + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return TOO_LARGE if size > limit else b"".join(chunks)
    except OSError:
        return MISSING
    finally:
        os.close(fd)


class _Folders:
    """Descriptors of the folders along the current path, each opened from
    its parent with O_NOFOLLOW, so no symlinked folder is ever entered."""

    def __init__(self, root: int) -> None:
        self.names: list[str] = []
        self.fds: list[int] = [root]

    def enter(self, parts: list[str]) -> int | None:
        shared = 0
        while (
            shared < len(self.names)
            and shared < len(parts)
            and self.names[shared] == parts[shared]
        ):
            shared += 1
        while len(self.names) > shared:
            self.names.pop()
            os.close(self.fds.pop())
        for part in parts[shared:]:
            try:
                fd = os.open(part, _OPEN_FOLDER, dir_fd=self.fds[-1])
            except OSError:
                return None
            self.names.append(part)
            self.fds.append(fd)
        return self.fds[-1]

    def close(self) -> None:
        while self.names:
            self.names.pop()
            os.close(self.fds.pop())
