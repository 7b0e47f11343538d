"""The `search` tool: `git grep` over the worktree, paged.

git grep searches the tracked files (from the index), then, when the page
wants more, the untracked ones git does not ignore; it skips binary files
(`-I`) and everything that is not a regular file, and follows no symlink; it
runs outside the jail, as all of Codex's git does, with the settings
`integrations.git` pins. Patterns are RE2 syntax: checked by RE2 first (an
invalid pattern, or one RE2 cannot run in linear time such as a
backreference, is refused), then run as a Perl-compatible pattern (`-P`,
the same syntax); a plain string is `-F`. The pattern and the path always
follow `-e` and `--`, so neither can be an option.

Where git grep cannot answer (no git worktree, git without PCRE, a pattern
that hits PCRE's backtracking limit), the same search runs in Python with RE2
(linear time) over the worktree's regular text files. Both stop at the tool
call's wall-time limit (agents.tools.time_left).
"""

from __future__ import annotations

import logging
import os
import re
import stat
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import re2

from agents.files import SKIPPED_NAMES, is_regular
from agents.tools import ToolError, check_time, time_left
from integrations.git.streaming import GitStream

logger = logging.getLogger(__name__)

PAGE_SIZE = 100
MAX_PAGE_SIZE = 500
# Matches past the page are counted up to this many ("more than N"): a
# search stops soon after its page, as git grep would, instead of reading a
# large tree to the end for a total the agent rarely needs.
COUNTED_PAST_THE_PAGE = 100
MAX_LINE_CHARS = 500
# The Python fallback skips files larger than this.
MAX_SEARCH_FILE_BYTES = 1_000_000
# git grep's own limit when no tool deadline applies (a direct call).
GIT_GREP_SECONDS = 60.0
# Untracked files searched per git grep (its command line stays short).
UNTRACKED_PER_CALL = 500
GIT_ENV = {
    # Paths are names, never patterns or magic (":(top)", "*").
    "GIT_LITERAL_PATHSPECS": "1",
}

REGEX_DIALECT = (
    "RE2 syntax (as Python's re without backreferences or lookaround; "
    r"\d \w \s \b, (?i), [[:alpha:]] work)"
)


@dataclass
class Page:
    """Matches `offset`.. of a search: the page's lines and how many in all."""

    offset: int
    limit: int
    lines: list[str] = field(default_factory=list)
    seen: int = 0  # matches counted (the page's and those around it)
    complete: bool = True  # every match was counted
    stopped: str = ""  # why the search ended before the last file

    def add(self, line: str) -> bool:
        """Count one match (kept if it falls in the page); False once no
        more need counting."""
        if self.offset <= self.seen < self.offset + self.limit:
            self.lines.append(line)
        self.seen += 1
        if self.seen >= self.offset + self.limit + COUNTED_PAST_THE_PAGE:
            self.complete = False
            return False
        return True

    def answer(self) -> str:
        text = self._listing()
        return f"{text}\n[{self.stopped}]" if self.stopped else text

    def _listing(self) -> str:
        if not self.lines:
            if self.seen and self.offset:
                return f"(no matches from offset {self.offset}: {self.seen} in all)"
            return "(no matches)"
        text = "\n".join(self.lines)
        end = self.offset + len(self.lines)
        total = f"{self.seen}" if self.complete else f"more than {self.seen}"
        if end < self.seen:
            more = self.seen - end
            more_text = f"{more}" if self.complete else f"more than {more}"
            return (
                f"{text}\n[matches {self.offset + 1}-{end} of {total}; {more_text} "
                f"more: ask for offset={end}, or narrow the path or the pattern]"
            )
        if self.offset:
            return f"{text}\n[matches {self.offset + 1}-{end} of {total}]"
        return text


class Searching:
    """The search of a Sandbox: needs its `root`, `resolve` and `relative`."""

    root: Path

    def resolve(self, name: str, *, for_write: bool = False) -> Path:
        raise NotImplementedError

    def relative(self, path: Path) -> str:
        raise NotImplementedError

    def search(
        self,
        pattern: str,
        path: str = ".",
        regex: bool = False,
        ignore_case: bool = False,
        offset: int = 0,
        limit: int = PAGE_SIZE,
    ) -> str:
        """Lines matching `pattern` (plain text unless `regex`) as
        path:line:text, matches `offset` to `offset + limit`."""
        if not isinstance(pattern, str) or not pattern:
            raise ToolError("a pattern is required")
        if "\x00" in pattern or "\n" in pattern:
            raise ToolError("a pattern is one line of text (no NUL, no newline)")
        matcher = _matcher(pattern, regex=regex, ignore_case=ignore_case)
        base = self.resolve(path or ".")
        if not base.exists():
            raise ToolError(f"{path!r} does not exist")
        offset = max(0, int(offset))
        limit = max(1, min(int(limit), MAX_PAGE_SIZE))
        page = Page(offset, limit)
        if not self._git_grep(pattern, base, regex, ignore_case, page):
            page = Page(offset, limit)
            self._python_search(matcher, base, page)
        return page.answer()

    # -- git grep -------------------------------------------------------------

    def _git_grep(
        self, pattern: str, base: Path, regex: bool, ignore_case: bool, page: Page
    ) -> bool:
        """Fill `page` from git grep; False when git grep could not answer
        (the Python search then does). The tracked files first, from the
        index (a search with many matches ends soon, as bare git grep's
        would); the untracked files git does not ignore only when the page
        wants more, since finding them walks the whole tree."""
        if not (self.root / ".git").exists():
            return False  # not a git worktree: git would search a parent's
        options = ["-I", "-n", "-z", "--no-color", "-P" if regex else "-F"]
        if ignore_case:
            options.append("-i")
        options += ["-e", pattern, "--"]
        seconds = time_left()
        if seconds == float("inf"):
            seconds = GIT_GREP_SECONDS
        if seconds <= 0:
            raise ToolError("stopped at the tool's time limit before searching")
        deadline = time.monotonic() + seconds
        where = self.relative(base)
        answered = self._grep(["grep", *options, where], deadline, page)
        if answered is not True:
            return answered is None and page.seen > 0
        if not page.complete:
            return True
        untracked = self._untracked(where, deadline)
        for start in range(0, len(untracked), UNTRACKED_PER_CALL):
            batch = untracked[start : start + UNTRACKED_PER_CALL]
            answered = self._grep(
                ["grep", "--no-index", *options, *batch], deadline, page
            )
            if answered is not True or not page.complete:
                return answered is not False
        return True

    def _grep(self, args: list[str], deadline: float, page: Page) -> bool | None:
        """One git grep into `page`: True when it answered, False when git
        grep cannot (the Python search then does), None when it stopped at
        the time limit with matches already counted."""
        seconds = deadline - time.monotonic()
        if seconds <= 0:
            return self._stopped(seconds, page)
        try:
            with GitStream(
                args, self.root, timeout=seconds, env=self._git_env()
            ) as stream:
                for line in _lines(stream.chunks(), MAX_LINE_CHARS * 4):
                    if not page.add(_shown(line)):
                        break
        except OSError as exc:
            logger.warning("git grep could not run: %s", exc)
            return False
        if stream.timed_out:
            return self._stopped(seconds, page)
        if stream.returncode in (0, 1) or not page.complete:
            return True
        # 128: a pattern PCRE cannot run (its backtracking limit) or a git
        # without PCRE: RE2 answers instead.
        logger.info("git grep failed (%s): %s", stream.returncode, stream.stderr)
        return False

    def _git_env(self) -> dict[str, str]:
        # Never a repository above the worktree.
        return {**GIT_ENV, "GIT_CEILING_DIRECTORIES": str(self.root.parent)}

    @staticmethod
    def _stopped(seconds: float, page: Page) -> None:
        if page.seen > page.offset:
            page.complete = False
            page.stopped = (
                f"the search stopped at its time limit ({max(seconds, 0):.0f}s): "
                "there may be more matches; narrow the path or the pattern"
            )
            return None
        raise ToolError(
            f"search stopped at its time limit with {page.seen} matches "
            "counted; narrow the path or the pattern"
        )

    def _untracked(self, where: str, deadline: float) -> list[str]:
        """The untracked files under `where` git does not ignore."""
        seconds = deadline - time.monotonic()
        if seconds <= 0:
            return []
        args = ["ls-files", "-z", "--others", "--exclude-standard", "--", where]
        with GitStream(args, self.root, timeout=seconds, env=self._git_env()) as stream:
            listed = b"".join(stream.chunks())
        return [name for name in listed.decode(errors="replace").split("\0") if name]

    # -- the fallback: RE2 in Python ---------------------------------------------

    def _python_search(self, matcher: Any, base: Path, page: Page) -> None:
        files = [base] if base.is_file() else self._files_under(base)
        for file in files:
            check_time("searching")
            for number, text in _matching_lines(file, matcher):
                if not page.add(f"{self.relative(file)}:{number}:{text}"):
                    return

    def _files_under(self, base: Path) -> Iterator[Path]:
        """Regular files under `base`, sorted, inside the worktree."""
        for folder, dirs, files in os.walk(base):
            check_time("listing the files to search")
            dirs[:] = sorted(d for d in dirs if d not in SKIPPED_NAMES)
            for name in sorted(set(files) - SKIPPED_NAMES):
                file = Path(folder) / name
                # A symlinked file may point out of the worktree: skip it.
                if file.resolve().is_relative_to(self.root) and is_regular(file):
                    yield file


def _matching_lines(file: Path, matcher: Any) -> Iterator[tuple[int, str]]:
    """Numbered lines of a regular text file that `matcher` finds."""
    try:
        # O_NONBLOCK: a file swapped for a pipe since the walk cannot block.
        fd = os.open(
            file.resolve(), os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC
        )
    except OSError:
        return
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_SEARCH_FILE_BYTES:
            return
        data = handle.read(MAX_SEARCH_FILE_BYTES + 1)
    if b"\x00" in data[:8000] or len(data) > MAX_SEARCH_FILE_BYTES:
        return
    for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
        # RE2 runs in linear time; a bounded slice bounds it further.
        if matcher.search(line[: MAX_LINE_CHARS * 4]):
            yield number, line[:MAX_LINE_CHARS]


def _lines(chunks: Iterable[bytes], max_bytes: int) -> Iterator[bytes]:
    """The lines of a stream, each cut to `max_bytes` (a minified file's line
    of megabytes is never held whole)."""
    current = bytearray()
    for chunk in chunks:
        start = 0
        while True:
            newline = chunk.find(b"\n", start)
            end = len(chunk) if newline < 0 else newline
            room = max_bytes - len(current)
            if room > 0:
                current.extend(chunk[start : min(end, start + room)])
            if newline < 0:
                break
            yield bytes(current)
            current.clear()
            start = newline + 1
    if current:
        yield bytes(current)


def _shown(line: bytes) -> str:
    """git grep -z's `path NUL number NUL text` as path:number:text."""
    parts = line.split(b"\x00", 2)
    if len(parts) < 3:
        return line.decode("utf-8", "replace")[:MAX_LINE_CHARS]
    path, number, text = (part.decode("utf-8", "replace") for part in parts)
    return f"{path}:{number}:{text[:MAX_LINE_CHARS]}"


def _matcher(pattern: str, *, regex: bool, ignore_case: bool) -> Any:
    """A compiled search: RE2 (linear time, no catastrophic backtracking)
    for regular expressions, a plain escaped pattern otherwise."""
    options = re2.Options()
    options.case_sensitive = not ignore_case
    options.log_errors = False
    try:
        return re2.compile(pattern if regex else re.escape(pattern), options)
    except re2.error as exc:
        raise ToolError(f"invalid regular expression: {exc}") from None
