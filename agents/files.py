"""Regular files only, read within limits: what the file tools stand on.

An agent can make a named pipe, a socket or (through a backend that allows
it) a device in its worktree. Opening a pipe blocks until someone writes to
it, and reading a device may never end, so the file tools open nothing but
regular files: the type is checked before opening, then again on the open
descriptor (O_NOFOLLOW, O_NONBLOCK: the open itself cannot block or follow a
link swapped in meanwhile).

Reads stream: `read_lines` reads only as far as the requested lines, in
chunks, with a byte limit on what it keeps, so line 1 of a huge file costs
one chunk and never the file.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from agents.tools import ToolError, check_time

CHUNK_BYTES = 64 * 1024
# A file with a NUL byte in its first part is binary (as git decides).
BINARY_SNIFF_BYTES = 8000
# After the requested lines, newlines are counted this far at most (the
# header's "of N lines"); beyond it the header says "at least".
COUNT_LIMIT_BYTES = 64 * 1024 * 1024

# Left out of listings and searches: git's own folder (a file in a worktree)
# and dependency folders.
SKIPPED_NAMES = frozenset({".git", "node_modules", "__pycache__", ".venv", "venv"})

KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def kind_of(mode: int) -> str:
    """What a file of `mode` is, in words."""
    for test, name in KINDS:
        if test(mode):
            return name
    return "not a regular file"


def refuse_special(name: str, mode: int) -> None:
    """ToolError when `mode` is not a regular file's, saying what it is."""
    if not stat.S_ISREG(mode):
        raise ToolError(
            f"{name!r} is {kind_of(mode)}; the file tools read and write "
            "regular files only"
        )


@contextlib.contextmanager
def open_regular(path: Path, name: str) -> Iterator[int]:
    """A read-only descriptor of the regular file `path` (already resolved
    inside the worktree); ToolError for anything else, with the reason."""
    try:
        refuse_special(name, os.stat(path).st_mode)
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        raise ToolError(f"{name!r} does not exist") from None
    except OSError as exc:
        raise ToolError(f"{name!r} cannot be opened: {exc.strerror}") from None
    try:
        # Checked again on what was opened: the path may have changed since.
        refuse_special(name, os.fstat(fd).st_mode)
        yield fd
    finally:
        os.close(fd)


def is_regular(path: Path) -> bool:
    """Whether `path` (links followed) is a regular file; False if missing."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def looks_binary(fd: int) -> bool:
    return b"\x00" in os.pread(fd, BINARY_SNIFF_BYTES, 0)


def read_capped(fd: int, limit: int, name: str) -> bytes:
    """The whole file, refused when it holds more than `limit` bytes (it is
    read at most one byte past the limit, whatever its size says)."""
    parts: list[bytes] = []
    size = 0
    while chunk := os.read(fd, min(CHUNK_BYTES, limit + 1 - size)):
        parts.append(chunk)
        size += len(chunk)
        if size > limit:
            raise ToolError(
                f"{name!r} is larger than the {limit}-byte limit for one file; "
                "change it with a command instead"
            )
    return b"".join(parts)


@dataclass
class Lines:
    """What `read_lines` found: the lines kept (number, text, whether the
    line was cut), where it stopped early, and the file's line count."""

    shown: list[tuple[int, str, bool]] = field(default_factory=list)
    stopped_at: int | None = None  # the first line not shown (byte limit)
    total: int = 0
    total_exact: bool = True


def read_lines(
    fd: int, start: int, end: int | None, *, max_bytes: int, max_line_bytes: int
) -> Lines:
    """Lines `start`..`end` (1-based, inclusive; None: to the end) of the
    open file, read in chunks: lines before `start` are counted and dropped,
    a line longer than `max_line_bytes` is cut, and reading stops once
    `max_bytes` are kept. Then newlines are counted on for the total."""
    found = Lines()
    number = 1  # the line the next byte belongs to
    kept = 0
    current = bytearray()
    cut = False
    counted_after = 0
    last = b""
    while True:
        check_time("reading the file")
        chunk = os.read(fd, CHUNK_BYTES)
        if not chunk:
            break
        last = chunk[-1:]
        if found.stopped_at is not None or (end is not None and number > end):
            # Past what is shown: count the newlines, keep nothing.
            number += chunk.count(b"\n")
            counted_after += len(chunk)
            if counted_after > COUNT_LIMIT_BYTES:
                found.total_exact = False
                break
            continue
        newlines = chunk.count(b"\n")
        if number + newlines < start:
            number += newlines  # the whole chunk is before the range
            continue
        position = 0
        while position < len(chunk):
            newline = chunk.find(b"\n", position)
            piece = chunk[position : len(chunk) if newline < 0 else newline]
            position = len(chunk) if newline < 0 else newline + 1
            if number >= start and (end is None or number <= end):
                room = max_line_bytes - len(current)
                if len(piece) > room:
                    cut = True
                current.extend(piece[: max(room, 0)])
            if newline < 0:
                break
            if number >= start and (end is None or number <= end):
                if kept and kept + len(current) > max_bytes:
                    found.stopped_at = number
                else:
                    found.shown.append((number, _text(current), cut))
                    kept += len(current) + 1
            current.clear()
            cut = False
            number += 1
            if found.stopped_at is not None or (end is not None and number > end):
                # The rest of the chunk is past the range: count it.
                number += chunk.count(b"\n", position)
                break
    # A last line without a newline is a line too.
    ends_open = last not in (b"", b"\n")
    in_range = start <= number and (end is None or number <= end)
    if ends_open and found.stopped_at is None and in_range:
        if kept and kept + len(current) > max_bytes:
            found.stopped_at = number
        else:
            found.shown.append((number, _text(current), cut))
    found.total = number if ends_open else number - 1
    return found


def _text(line: bytearray) -> str:
    return bytes(line).rstrip(b"\r").decode("utf-8", errors="replace")


def replace_file(target: Path, data: bytes) -> None:
    """Write `data` as a new file and rename it over `target`: never through
    a hard link or a symlink swapped in, and never half written."""
    mode = 0o644
    with contextlib.suppress(FileNotFoundError):
        mode = target.stat().st_mode & 0o777
    fd, temporary = tempfile.mkstemp(dir=target.parent, prefix=".codex-write-")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(temporary, mode)
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
