"""The tools an agent uses in its task's worktree: files, search and a shell.

Commands (the `bash` tool, or `run_command` where a repository keeps an
allow-list) run in the command jail (integrations.jail): the worktree is the
only writable place, nothing of the worker is visible, there is no network,
and the whole jail dies when a call ends. The file tools run in the worker,
so they refuse every path that resolves outside the worktree (symlinks
included), NUL bytes, absolute paths and anything inside `.git`; they touch
regular files only (a named pipe, socket or device is refused, agents.files);
a write replaces the file (a new inode), so a hard link made inside the jail
cannot carry it to another file. Every tool's input is validated against its
JSON schema before the tool runs, and every file tool call has a wall-time
limit of its own. What the agent sees of the tools: docs/jail.md#the-agents-tools.

This module holds the worktree (paths) and the tools that change files; the
reading tools are agents.reading, the search agents.search, commands
agents.shell, the tools' definitions agents.sandbox_tools.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from django.conf import settings

from agents.edits import Edit, apply_edits, change_report
from agents.files import (
    is_regular,
    open_regular,
    read_capped,
    refuse_special,
    replace_file,
)
from agents.reading import FileReading
from agents.sandbox_tools import sandbox_tools
from agents.search import Searching
from agents.shell import JailedCommands
from agents.tools import Tool, ToolError
from integrations.jail import CommandResult, Jail, worktree_over_quota

__all__ = ["WRITE_TOOLS", "CommandResult", "Sandbox"]

DEFAULT_MAX_WRITE_BYTES = 1_000_000
# The tools that change files: left out for read-only roles.
WRITE_TOOLS = frozenset(
    {"write_file", "edit_file", "multi_edit", "delete_file", "move_file"}
)


class Sandbox(FileReading, Searching, JailedCommands):
    """The tools of one agent run, confined to `root` (the task's worktree)."""

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        jail: Jail | None = None,
        allowed_commands: Iterable[str] | None = None,
        max_write_bytes: int = DEFAULT_MAX_WRITE_BYTES,
        role: str | None = None,
        on_output: Callable[[str], None] | None = None,
        tool_timeout: float | None = None,
    ) -> None:
        """`jail`: where commands run (by default the configured backend's jail
        of `root`). `allowed_commands`: None gives the agent a shell (`bash`);
        a list keeps a repository's allow-list policy (`run_command`, no
        shell, only those programs), still inside the jail. `role`: whose
        run this is (a command's longest timeout follows the role's time
        budget). `on_output`: called with each piece of a command's output as
        it comes (the run's live log). `tool_timeout`: the wall-time limit of
        one file tool call (CODEX_SANDBOX_FILE_TOOL_TIMEOUT)."""
        self.root = Path(root).resolve(strict=True)
        if not self.root.is_dir():
            raise NotADirectoryError(self.root)
        self._jail = jail
        self.allowed_commands = (
            None if allowed_commands is None else frozenset(allowed_commands)
        )
        self.max_write_bytes = max_write_bytes
        self.role = role
        self.on_output = on_output
        self.tool_timeout = float(
            tool_timeout or settings.CODEX_SANDBOX_FILE_TOOL_TIMEOUT
        )
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

    # -- the tools that change files ------------------------------------------

    def write_file(self, path: str, content: str) -> tuple[str, list[str]]:
        """Create or replace a file with `content` (parents created); the
        answer shows the change and the syntax check."""
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
        before = self._text_before_write(target, path)
        target.parent.mkdir(parents=True, exist_ok=True)
        replace_file(target, data)
        name = self.relative(target)
        self.files_changed.add(name)
        if over := worktree_over_quota(self.root, self._jail):
            raise ToolError(over)
        report = change_report(name, before, content)
        return f"wrote {len(data)} bytes to {name}\n{report}", [name]

    def edit_file(
        self, path: str, old: str, new: str, replace_all: bool = False
    ) -> tuple[str, list[str]]:
        """Replace the one occurrence of `old` with `new` (every occurrence
        with `replace_all`)."""
        return self._edit(path, [Edit(old, new, bool(replace_all))])

    def multi_edit(
        self, path: str, edits: list[dict[str, Any]]
    ) -> tuple[str, list[str]]:
        """Apply `edits` ({old, new, replace_all}) to one file in order, each
        to the result of the one before: all of them, or none."""
        if not edits:
            raise ToolError("edits must hold at least one edit")
        return self._edit(
            path,
            [
                Edit(edit["old"], edit["new"], bool(edit.get("replace_all")))
                for edit in edits
            ],
        )

    def _edit(self, path: str, edits: list[Edit]) -> tuple[str, list[str]]:
        target = self.resolve(path, for_write=True)
        if target.is_dir():
            raise ToolError(f"{path!r} is a folder")
        with open_regular(target, path) as fd:
            raw = read_capped(fd, self.max_write_bytes, path)
        try:
            # Bytes decoded as they are: the file's CRLF line endings stay.
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise ToolError(
                f"{path!r} is not UTF-8 text; change it with a command"
            ) from None
        updated, count = apply_edits(text, edits)
        data = updated.encode("utf-8")
        if len(data) > self.max_write_bytes:
            raise ToolError("refused: the edited file would exceed the size limit")
        replace_file(target, data)
        name = self.relative(target)
        self.files_changed.add(name)
        times = f" ({count} replacements)" if len(edits) > 1 else ""
        if len(edits) == 1 and edits[0].replace_all and count > 1:
            times = f" ({count} occurrences)"
        if over := worktree_over_quota(self.root, self._jail):
            raise ToolError(over)
        return f"edited {name}{times}\n{change_report(name, text, updated)}", [name]

    def _text_before_write(self, target: Path, path: str) -> str | None:
        """The text a write replaces (None: a new file, or one too large to
        compare); refuses a folder and anything but a regular file."""
        if not os.path.lexists(target):
            return None
        if target.is_dir():
            raise ToolError(f"{path!r} is a directory")
        if not is_regular(target):
            refuse_special(path, os.stat(target).st_mode)
        with open_regular(target, path) as fd:
            try:
                raw = read_capped(fd, self.max_write_bytes, path)
            except ToolError:
                return None
        return raw.decode("utf-8", errors="replace")

    def delete_file(self, path: str) -> tuple[str, list[str]]:
        """Delete one file of the worktree (never a folder, never in .git); a
        named pipe or socket the agent made may be deleted too."""
        target = self.resolve(path, for_write=True)
        if target == self.root or target.is_dir():
            raise ToolError(f"{path!r} is a folder; delete its files one by one")
        if not os.path.lexists(target):
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
        if not os.path.lexists(origin) or origin.is_dir():
            raise ToolError(f"{source!r} is not a file")
        if not is_regular(origin):
            refuse_special(source, os.stat(origin).st_mode)
        if os.path.lexists(target):
            raise ToolError(f"{destination!r} already exists")
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(origin, target)
        names = [self.relative(origin), self.relative(target)]
        self.files_changed.update(names)
        if over := worktree_over_quota(self.root, self._jail):
            raise ToolError(over)
        return f"moved {names[0]} to {names[1]}", names

    # -- as model tools -------------------------------------------------------

    def tools(self, *, read_only: bool = False) -> list[Tool]:
        """The sandbox's tools with their API definitions; `read_only` leaves
        out the ones that change files (roles that only read and check)."""
        tools = sandbox_tools(self)
        if read_only:
            return [tool for tool in tools if tool.name not in WRITE_TOOLS]
        return tools
