"""The sandboxed tools an agent uses in its task's worktree.

Every path an agent names is resolved (symlinks included) and refused unless
it lands inside the worktree; NUL bytes, absolute paths and writes into `.git`
(hooks and config there run code the worker later executes with its own
environment) are refused too. Commands run without a shell, only when their
program is on the allow-list, with an environment built from nothing (PATH,
HOME, LANG: never the worker's, which holds the API keys), a timeout that
kills the whole process group and an output cap.

This is a guard rail, not a jail: an allowed interpreter can still read files
outside the worktree. Isolation from the host needs a container around the
worker; these checks keep an agent's ordinary mistakes and a prompt-injected
instruction from reaching secrets or other worktrees through the tools.

The tools themselves are `agents.tools.Tool`s: `Sandbox.tools()` gives
the runtime the ones bound to one worktree.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agents.tools import Tool, ToolError, _schema, cap_text

DEFAULT_ALLOWED_COMMANDS = ("python", "python3", "pytest", "ruff", "mypy")
DEFAULT_COMMAND_TIMEOUT = 120
DEFAULT_OUTPUT_CAP = 20_000  # characters shown to the model
DEFAULT_MAX_WRITE_BYTES = 1_000_000
DEFAULT_READ_CAP = 100_000  # characters of one read_file answer
MAX_LIST_ENTRIES = 1000
MAX_SEARCH_MATCHES = 100
MAX_SEARCH_FILE_BYTES = 1_000_000
MAX_LINE_CHARS = 500
# A runaway command is killed once it has printed this much, well before the
# timeout, so it cannot fill memory while the reader discards what it prints.
KILL_AFTER_OUTPUT_BYTES = 20_000_000
SKIPPED_DIRS = frozenset({".git", "node_modules", "__pycache__", ".venv", "venv"})


@dataclass
class CommandResult:
    exit_code: int | None
    output: str
    total_bytes: int
    timed_out: bool


class Sandbox:
    """The tools of one agent run, confined to `root` (the task's worktree)."""

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        allowed_commands: Iterable[str] = DEFAULT_ALLOWED_COMMANDS,
        command_timeout: float = DEFAULT_COMMAND_TIMEOUT,
        output_cap: int = DEFAULT_OUTPUT_CAP,
        max_write_bytes: int = DEFAULT_MAX_WRITE_BYTES,
        path: str | None = None,
        extra_env: Mapping[str, str] | None = None,
    ) -> None:
        self.root = Path(root).resolve(strict=True)
        if not self.root.is_dir():
            raise NotADirectoryError(self.root)
        self.allowed_commands = frozenset(allowed_commands)
        self.command_timeout = command_timeout
        self.output_cap = output_cap
        self.max_write_bytes = max_write_bytes
        # PATH for commands: the caller's choice (e.g. the repository's venv
        # first), else the system default; never the worker's own PATH.
        self.path = path or os.defpath
        # What an operator chose to add (CODEX_SANDBOX_ENV), nothing inherited.
        self.extra_env = {
            key: value
            for key, value in (extra_env or {}).items()
            if key not in ("PATH", "HOME")
        }
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
        flags = re.IGNORECASE if ignore_case else 0
        matcher = re.compile(pattern if regex else re.escape(pattern), flags)
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
                # Matching a bounded slice bounds a pathological regex too.
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
        target.write_bytes(data)
        name = self.relative(target)
        self.files_changed.add(name)
        return f"wrote {len(data)} bytes to {name}", [name]

    def edit_file(self, path: str, old: str, new: str) -> tuple[str, list[str]]:
        """Replace the one occurrence of `old` with `new`."""
        if not old:
            raise ToolError("old must be a non-empty string")
        if "\x00" in new:
            raise ToolError("new contains a NUL byte")
        target = self.resolve(path, for_write=True)
        if not target.is_file():
            raise ToolError(f"{path!r} is not a file")
        text = target.read_text(encoding="utf-8")
        count = text.count(old)
        if count == 0:
            raise ToolError("old was not found in the file; read it and retry")
        if count > 1:
            raise ToolError(
                f"old occurs {count} times; include more context to make it unique"
            )
        updated = text.replace(old, new, 1)
        if len(updated.encode("utf-8")) > self.max_write_bytes:
            raise ToolError("refused: the edited file would exceed the size limit")
        target.write_text(updated, encoding="utf-8")
        name = self.relative(target)
        self.files_changed.add(name)
        return f"edited {name}", [name]

    def command_env(self, home: str) -> dict[str, str]:
        """The whole environment of a command: nothing inherited."""
        return {
            "LANG": "C.UTF-8",
            **self.extra_env,
            "PATH": self.path,
            "HOME": home,
        }

    def run_command(
        self, command: str | list[str], cwd: str = ".", timeout: float | None = None
    ) -> CommandResult:
        """Run an allowed program (no shell) in the worktree."""
        argv = shlex.split(command) if isinstance(command, str) else list(command)
        if not argv or not all(isinstance(arg, str) for arg in argv):
            raise ToolError("command must be a non-empty list of strings")
        if any("\x00" in arg for arg in argv):
            raise ToolError("command contains a NUL byte")
        program = argv[0]
        if "/" in program or program not in self.allowed_commands:
            allowed = ", ".join(sorted(self.allowed_commands)) or "none"
            raise ToolError(
                f"{program!r} is not an allowed command (allowed: {allowed})"
            )
        executable = shutil.which(program, path=self.path)
        if executable is None:
            raise ToolError(f"{program!r} is not installed")
        workdir = self.resolve(cwd)
        if not workdir.is_dir():
            raise ToolError(f"{cwd!r} is not a directory")
        limit = (
            self.command_timeout
            if timeout is None
            else min(float(timeout), self.command_timeout)
        )
        with tempfile.TemporaryDirectory(prefix="codex-home-") as home:
            return _run(
                [executable, *argv[1:]],
                cwd=workdir,
                env=self.command_env(home),
                timeout=limit,
                cap=self.output_cap,
            )

    # -- as model tools -----------------------------------------------------

    def _run_tool(self, arguments: dict[str, Any]) -> str:
        result = self.run_command(
            arguments["command"],
            cwd=arguments.get("cwd") or ".",
            timeout=arguments.get("timeout"),
        )
        status = (
            f"timed out after {self.command_timeout:g}s and was killed"
            if result.timed_out
            else f"exit code {result.exit_code}"
        )
        text = f"{status}\n{result.output}"
        if result.timed_out or result.exit_code != 0:
            raise ToolError(text)
        return text

    def tools(self) -> list[Tool]:
        """The sandbox's tools with their API definitions."""
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
                "Replace exactly one occurrence of `old` with `new` in a file; "
                "`old` must be unique in the file.",
                _schema(
                    {
                        "path": {"type": "string"},
                        "old": {"type": "string"},
                        "new": {"type": "string"},
                    },
                    ["path", "old", "new"],
                ),
                lambda a: self.edit_file(a["path"], a["old"], a["new"]),
            ),
            Tool(
                "run_command",
                "Run an allowed program in the worktree, without a shell "
                f"(allowed: {', '.join(sorted(self.allowed_commands)) or 'none'}). "
                "No network credentials or secrets are available to it.",
                _schema(
                    {
                        "command": {
                            "type": "array",
                            "items": {"type": "string"},
                            "description": "program and arguments",
                        },
                        "cwd": {"type": "string", "default": "."},
                        "timeout": {"type": "number"},
                    },
                    ["command"],
                ),
                self._run_tool,
            ),
        ]


def _run(
    argv: list[str], *, cwd: Path, env: dict[str, str], timeout: float, cap: int
) -> CommandResult:
    """Run `argv` in its own process group, keep the first `cap` characters of
    its combined output, and kill the group on timeout or runaway output."""
    process = subprocess.Popen(
        argv,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    kept = bytearray()
    total = 0
    runaway = threading.Event()

    def read() -> None:
        nonlocal total
        assert process.stdout is not None
        while chunk := process.stdout.read1(65536):
            total += len(chunk)
            if len(kept) < cap * 4:  # utf-8: at most 4 bytes a character
                kept.extend(chunk[: cap * 4 - len(kept)])
            if total > KILL_AFTER_OUTPUT_BYTES:
                runaway.set()
                _kill_group(process)
                break

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    deadline = time.monotonic() + timeout
    timed_out = False
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill_group(process)
        process.wait()
    # A grandchild may hold the pipe open after the leader exits: kill the
    # group, and give the reader a bounded time to drain.
    _kill_group(process)
    reader.join(timeout=max(1.0, deadline - time.monotonic()))
    process.stdout.close()
    text = kept.decode("utf-8", errors="replace")
    if total > len(kept) or len(text) > cap:
        text = (
            f"{text[:cap]}\n[output truncated: showing the first "
            f"{min(len(text), cap)} characters of {total} bytes of output]"
        )
    if runaway.is_set():
        text += f"\n[killed: printed more than {KILL_AFTER_OUTPUT_BYTES} bytes]"
    return CommandResult(
        exit_code=None if timed_out else process.returncode,
        output=text,
        total_bytes=total,
        timed_out=timed_out,
    )


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    # The group may be gone already (it exited, or was killed a moment ago).
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
