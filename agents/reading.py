"""The tools that look at the worktree's files: `list_files` and `read_file`.

Both touch regular files only (agents.files): a named pipe, a socket or a
device is left out of a listing and refused by a read, with what it is. A
listing is paged and says how many files there are; a read streams the
lines asked for, within a byte limit, and says where to go on.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from agents.files import (
    SKIPPED_NAMES,
    is_regular,
    looks_binary,
    open_regular,
    read_lines,
)
from agents.tools import ToolError, check_time

LIST_PAGE_SIZE = 500
MAX_LIST_PAGE_SIZE = 2000
# What one read_file answer holds at most: its lines' bytes, and one line's.
MAX_READ_BYTES = 100_000
MAX_READ_LINE_BYTES = 10_000


class FileReading:
    """The reading tools of a Sandbox: needs its `root`, `resolve` and
    `relative`."""

    root: Path

    def resolve(self, name: str, *, for_write: bool = False) -> Path:
        raise NotImplementedError

    def relative(self, path: Path) -> str:
        raise NotImplementedError

    def list_files(
        self, path: str = ".", offset: int = 0, limit: int = LIST_PAGE_SIZE
    ) -> str:
        """Regular files under `path`, one per line, relative to the root
        (VCS and dependency folders skipped), `limit` of them from `offset`,
        and how many there are."""
        base = self.resolve(path or ".")
        if is_regular(base):
            return self.relative(base)
        if not base.is_dir():
            if base.exists():
                with open_regular(base, path):  # refuses it, saying what it is
                    pass
            raise ToolError(f"{path!r} does not exist")
        offset = max(0, int(offset))
        limit = max(1, min(int(limit), MAX_LIST_PAGE_SIZE))
        page: list[str] = []
        total = 0
        for name in self._listed(base):
            if offset <= total < offset + limit:
                page.append(name)
            total += 1
        if not total:
            return "(no files)"
        if not page:
            return f"(no files from offset {offset}: {total} in all)"
        end = offset + len(page)
        text = "\n".join(page)
        if end < total:
            return (
                f"{text}\n[files {offset + 1}-{end} of {total}; more: ask for "
                f"offset={end}, or list a subfolder]"
            )
        if offset:
            return f"{text}\n[files {offset + 1}-{end} of {total}]"
        return text

    def _listed(self, base: Path) -> Iterator[str]:
        for folder, dirs, files in os.walk(base):
            check_time("listing files")
            dirs[:] = sorted(d for d in dirs if d not in SKIPPED_NAMES)
            # A worktree's .git is a file: skipped as the folder is.
            for name in sorted(set(files) - SKIPPED_NAMES):
                file = Path(folder) / name
                if file.is_symlink() and not file.resolve().is_relative_to(self.root):
                    continue  # the file tools could not read it
                if is_regular(file):
                    yield self.relative(file)

    def read_file(
        self, path: str, start_line: int | None = None, end_line: int | None = None
    ) -> str:
        """Lines `start_line`..`end_line` (1-based, inclusive) of a text file,
        each prefixed with its number; only those lines are read."""
        target = self.resolve(path)
        if target.is_dir():
            raise ToolError(f"{path!r} is a folder; list_files shows its files")
        start = max(1, int(start_line or 1))
        end = None if end_line is None else int(end_line)
        if end is not None and end < start:
            raise ToolError(f"end_line {end} is before start_line {start}")
        with open_regular(target, path) as fd:
            if looks_binary(fd):
                raise ToolError(f"{path!r} looks binary; it is not shown")
            found = read_lines(
                fd,
                start,
                end,
                max_bytes=MAX_READ_BYTES,
                max_line_bytes=MAX_READ_LINE_BYTES,
            )
        name = self.relative(target)
        total = f"{found.total}" if found.total_exact else f"at least {found.total}"
        if not found.shown:
            if found.total == 0:
                return f"{name} is empty (0 lines)"
            raise ToolError(
                f"line range {start}-{end or found.total} is past the end "
                f"({name} has {total} lines)"
            )
        first, last = found.shown[0][0], found.shown[-1][0]
        lines = [f"{name} lines {first}-{last} of {total}"]
        for number, text, cut in found.shown:
            marker = f" [line cut at {MAX_READ_LINE_BYTES} bytes]" if cut else ""
            lines.append(f"{number}\t{text}{marker}")
        if found.stopped_at is not None:
            lines.append(
                f"[stopped before line {found.stopped_at}: one read returns at "
                f"most {MAX_READ_BYTES} bytes; continue with "
                f"start_line={found.stopped_at}]"
            )
        return "\n".join(lines)
