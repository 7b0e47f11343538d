"""The tools an agent uses in its task's worktree: files, search and a shell.

Commands (the `bash` tool, or `run_command` where a repository keeps an
allow-list) run in the command jail (integrations.jail): the worktree is the
only writable place, nothing of the worker is visible, there is no network,
and the whole jail dies when a call ends. The file tools run in the worker,
so they refuse every path that resolves outside the worktree (symlinks
included), NUL bytes, absolute paths and anything inside `.git`; a write
replaces the file (a new inode), so a hard link made inside the jail cannot
carry it to another file. Every tool's input is validated against its JSON
schema before the tool runs.

The tools themselves are `agents.tools.Tool`s: `Sandbox.tools()` gives
the runtime the ones bound to one worktree.
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import re2

from agents.shell import JailedCommands
from agents.tools import Tool, ToolError, _schema, cap_text
from integrations.jail import CommandResult, Jail

__all__ = ["CommandResult", "Sandbox"]

DEFAULT_MAX_WRITE_BYTES = 1_000_000
DEFAULT_READ_CAP = 100_000  # characters of one read_file answer
MAX_LIST_ENTRIES = 1000
MAX_SEARCH_MATCHES = 100
MAX_SEARCH_FILE_BYTES = 1_000_000
MAX_LINE_CHARS = 500
# The tools that change files: left out for read-only roles.
WRITE_TOOLS = frozenset({"write_file", "edit_file", "delete_file", "move_file"})
SKIPPED_DIRS = frozenset({".git", "node_modules", "__pycache__", ".venv", "venv"})


class Sandbox(JailedCommands):
    """The tools of one agent run, confined to `root` (the task's worktree)."""

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        jail: Jail | None = None,
        allowed_commands: Iterable[str] | None = None,
        max_write_bytes: int = DEFAULT_MAX_WRITE_BYTES,
    ) -> None:
        """`jail`: where commands run (by default the configured backend's jail
        of `root`). `allowed_commands`: None gives the agent a shell (`bash`);
        a list keeps a repository's allow-list policy (`run_command`, no
        shell, only those programs), still inside the jail."""
        self.root = Path(root).resolve(strict=True)
        if not self.root.is_dir():
            raise NotADirectoryError(self.root)
        self._jail = jail
        self.allowed_commands = (
            None if allowed_commands is None else frozenset(allowed_commands)
        )
        self.max_write_bytes = max_write_bytes
        self.files_changed: set[str] = set()

    # -- paths --------------------------------------------------------------

    def resolve(self, name: str, *, for_write: bool = False) -> Path:
        """The real path of `name` inside the worktree, or ToolError."""
        if not isinstance(name, str) or not name.strip():
            raise ToolError("a path is required")
        if "\x00" in name:
            raise ToolError("path contains a NUL byte")
        if Path(name).is_absolute() or name.startswith("~"):
            raise ToolError(
                f"absolute paths are refused: give a path relative to the "
                f"worktree root ({name!r})"
            )
        # resolve() follows every symlink on the way, so a link pointing out of
        # the worktree resolves outside it and is refused below.
        target = (self.root / name).resolve(strict=False)
        if not target.is_relative_to(self.root):
            raise ToolError(f"{name!r} is outside the worktree")
        relative = target.relative_to(self.root)
        if for_write and ".git" in relative.parts:
            raise ToolError(f"{name!r}: writing inside .git is refused")
        return target

    def relative(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix() or "."

    # -- the tools ----------------------------------------------------------

    def list_files(self, path: str = ".", max_entries: int = MAX_LIST_ENTRIES) -> str:
        """Files under `path`, one per line, relative to the root (VCS and
        dependency folders skipped)."""
        base = self.resolve(path)
        if base.is_file():
            return self.relative(base)
        if not base.is_dir():
            raise ToolError(f"{path!r} does not exist")
        entries: list[str] = []
        for folder, dirs, files in os.walk(base):
            dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS)
            for name in sorted(files):
                entries.append(self.relative(Path(folder) / name))
                if len(entries) >= max_entries:
                    return "\n".join(entries) + (
                        f"\n[listing stopped at {max_entries} entries; "
                        "list a subfolder]"
                    )
        return "\n".join(entries) if entries else "(no files)"

    def read_file(
        self, path: str, start_line: int | None = None, end_line: int | None = None
    ) -> str:
        """Lines `start_line`..`end_line` (1-based, inclusive) of a text file,
        each prefixed with its number."""
        target = self.resolve(path)
        if not target.is_file():
            raise ToolError(f"{path!r} is not a file")
        data = target.read_bytes()
        if b"\x00" in data[:8192]:
            raise ToolError(f"{path!r} looks binary; it is not shown")
        lines = data.decode("utf-8", errors="replace").splitlines()
        start = max(1, int(start_line or 1))
        end = min(len(lines), int(end_line or len(lines)))
        if start > max(end, 1):
            raise ToolError(f"line range {start}-{end} is empty ({len(lines)} lines)")
        shown = "\n".join(f"{n}\t{lines[n - 1]}" for n in range(start, end + 1))
        header = f"{self.relative(target)} lines {start}-{end} of {len(lines)}\n"
        return cap_text(header + shown, DEFAULT_READ_CAP)

    def search(
        self,
        pattern: str,
        path: str = ".",
        regex: bool = False,
        ignore_case: bool = False,
        max_matches: int = MAX_SEARCH_MATCHES,
    ) -> str:
        """Lines matching `pattern` (plain text unless `regex`), as
        path:line:text, at most `max_matches`."""
        if not pattern:
            raise ToolError("a pattern is required")
        matcher = _matcher(pattern, regex=regex, ignore_case=ignore_case)
        base = self.resolve(path)
        files = [base] if base.is_file() else self._walk(base)
        hits: list[str] = []
        for file in files:
            try:
                if file.stat().st_size > MAX_SEARCH_FILE_BYTES:
                    continue
                data = file.read_bytes()
            except OSError:
                continue
            if b"\x00" in data[:8192]:
                continue
            text = data.decode("utf-8", errors="replace")
            for number, line in enumerate(text.splitlines(), 1):
                # RE2 runs in linear time; a bounded slice bounds it further.
                if matcher.search(line[: MAX_LINE_CHARS * 4]):
                    hits.append(
                        f"{self.relative(file)}:{number}:{line[:MAX_LINE_CHARS]}"
                    )
                    if len(hits) >= max_matches:
                        return "\n".join(hits) + (
                            f"\n[stopped at {max_matches} matches; narrow the search]"
                        )
        return "\n".join(hits) if hits else "(no matches)"

    def _walk(self, base: Path) -> list[Path]:
        found: list[Path] = []
        for folder, dirs, files in os.walk(base):
            dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS)
            for name in sorted(files):
                file = Path(folder) / name
                # A symlinked file may point out of the worktree: skip it.
                if file.resolve().is_relative_to(self.root):
                    found.append(file)
        return found

    def write_file(self, path: str, content: str) -> tuple[str, list[str]]:
        """Create or replace a file with `content` (parents created)."""
        if not isinstance(content, str):
            raise ToolError("content must be a string")
        if "\x00" in content:
            raise ToolError("content contains a NUL byte")
        data = content.encode("utf-8")
        if len(data) > self.max_write_bytes:
            raise ToolError(
                f"refused: {len(data)} bytes is more than the "
                f"{self.max_write_bytes}-byte limit for one file"
            )
        target = self.resolve(path, for_write=True)
        if target.is_dir():
            raise ToolError(f"{path!r} is a directory")
        target.parent.mkdir(parents=True, exist_ok=True)
        _replace(target, data)
        name = self.relative(target)
        self.files_changed.add(name)
        return f"wrote {len(data)} bytes to {name}", [name]

    def edit_file(
        self, path: str, old: str, new: str, replace_all: bool = False
    ) -> tuple[str, list[str]]:
        """Replace the one occurrence of `old` with `new` (every occurrence
        with `replace_all`)."""
        if not old:
            raise ToolError("old must be a non-empty string")
        if "\x00" in new:
            raise ToolError("new contains a NUL byte")
        target = self.resolve(path, for_write=True)
        if not target.is_file():
            raise ToolError(f"{path!r} is not a file")
        # newline="": the file's own line endings (CRLF stays CRLF).
        with open(target, encoding="utf-8", newline="") as handle:
            text = handle.read()
        if "\r\n" in text and "\r\n" not in old:
            old, new = old.replace("\n", "\r\n"), new.replace("\n", "\r\n")
        count = text.count(old)
        if count == 0:
            raise ToolError("old was not found in the file; read it and retry")
        if count > 1 and not replace_all:
            raise ToolError(
                f"old occurs {count} times; include more context to make it "
                "unique, or set replace_all to replace every occurrence"
            )
        updated = text.replace(old, new) if replace_all else text.replace(old, new, 1)
        if len(updated.encode("utf-8")) > self.max_write_bytes:
            raise ToolError("refused: the edited file would exceed the size limit")
        _replace(target, updated.encode("utf-8"))
        name = self.relative(target)
        self.files_changed.add(name)
        times = f" ({count} occurrences)" if replace_all and count > 1 else ""
        return f"edited {name}{times}", [name]

    def delete_file(self, path: str) -> tuple[str, list[str]]:
        """Delete one file of the worktree (never a folder, never in .git)."""
        target = self.resolve(path, for_write=True)
        if target == self.root or target.is_dir():
            raise ToolError(f"{path!r} is a folder; delete its files one by one")
        if not target.is_file() and not target.is_symlink():
            raise ToolError(f"{path!r} does not exist")
        name = self.relative(target)
        target.unlink()
        self.files_changed.add(name)
        return f"deleted {name}", [name]

    def move_file(self, source: str, destination: str) -> tuple[str, list[str]]:
        """Move or rename a file inside the worktree (parents created); the
        destination must not exist yet."""
        origin = self.resolve(source, for_write=True)
        target = self.resolve(destination, for_write=True)
        if not origin.is_file() or origin.is_symlink():
            raise ToolError(f"{source!r} is not a file")
        if target.exists() or target.is_symlink():
            raise ToolError(f"{destination!r} already exists")
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(origin, target)
        names = [self.relative(origin), self.relative(target)]
        self.files_changed.update(names)
        return f"moved {names[0]} to {names[1]}", names

    def tools(self, *, read_only: bool = False) -> list[Tool]:
        """The sandbox's tools with their API definitions; `read_only` leaves
        out the ones that change files (roles that only read and check)."""
        tools = self._tools()
        if read_only:
            return [tool for tool in tools if tool.name not in WRITE_TOOLS]
        return tools

    def _tools(self) -> list[Tool]:
        return [
            Tool(
                "list_files",
                "List the files under a folder of the worktree (relative path).",
                _schema({"path": {"type": "string", "default": "."}}),
                lambda a: self.list_files(a.get("path") or "."),
            ),
            Tool(
                "read_file",
                "Read a text file of the worktree, optionally lines start_line to "
                "end_line (1-based, inclusive). Lines are numbered.",
                _schema(
                    {
                        "path": {"type": "string"},
                        "start_line": {"type": "integer", "minimum": 1},
                        "end_line": {"type": "integer", "minimum": 1},
                    },
                    ["path"],
                ),
                lambda a: self.read_file(
                    a["path"], a.get("start_line"), a.get("end_line")
                ),
            ),
            Tool(
                "search",
                "Search the worktree's text files for a plain string (or a Python "
                "regular expression with regex=true); answers path:line:text.",
                _schema(
                    {
                        "pattern": {"type": "string"},
                        "path": {"type": "string", "default": "."},
                        "regex": {"type": "boolean", "default": False},
                        "ignore_case": {"type": "boolean", "default": False},
                    },
                    ["pattern"],
                ),
                lambda a: self.search(
                    a["pattern"],
                    a.get("path") or ".",
                    bool(a.get("regex")),
                    bool(a.get("ignore_case")),
                ),
            ),
            Tool(
                "write_file",
                "Create or overwrite a file of the worktree with the given content.",
                _schema(
                    {"path": {"type": "string"}, "content": {"type": "string"}},
                    ["path", "content"],
                ),
                lambda a: self.write_file(a["path"], a["content"]),
            ),
            Tool(
                "edit_file",
                "Replace exactly one occurrence of `old` with `new` in a file "
                "(`old` must be unique in the file), or every occurrence with "
                "replace_all. The file keeps its line endings.",
                _schema(
                    {
                        "path": {"type": "string"},
                        "old": {"type": "string", "minLength": 1},
                        "new": {"type": "string"},
                        "replace_all": {"type": "boolean", "default": False},
                    },
                    ["path", "old", "new"],
                ),
                lambda a: self.edit_file(
                    a["path"], a["old"], a["new"], bool(a.get("replace_all"))
                ),
            ),
            Tool(
                "delete_file",
                "Delete a file of the worktree (a file, not a folder).",
                _schema({"path": {"type": "string"}}, ["path"]),
                lambda a: self.delete_file(a["path"]),
            ),
            Tool(
                "move_file",
                "Move or rename a file of the worktree; the destination must "
                "not exist (its folders are created).",
                _schema(
                    {"source": {"type": "string"}, "destination": {"type": "string"}},
                    ["source", "destination"],
                ),
                lambda a: self.move_file(a["source"], a["destination"]),
            ),
            self._command_tool(),
        ]


def _replace(target: Path, data: bytes) -> None:
    """Write `data` as a new file and rename it over `target`: never through
    a hard link or a symlink swapped in, and never half written."""
    mode = 0o644
    if target.exists():
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
