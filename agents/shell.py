"""The agent's commands: a shell (`bash`), or a repository's allow-listed
programs (`run_command`), run in the task's command jail (integrations.jail,
docs/jail.md). A mixin of agents.sandbox.Sandbox, which holds the worktree
(`root`, `resolve`, `relative`), the policy (`allowed_commands`), the role
and where output goes as it comes (`on_output`).

A call runs for CODEX_SANDBOX_COMMAND_TIMEOUT unless it asks for another
timeout: shorter, or longer up to `max_command_timeout` (a long build or test
run); a longer one runs in a copy of the jail whose wall and CPU time are
raised to it, the other limits unchanged.
"""

from __future__ import annotations

import codecs
import dataclasses
import logging
import math
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.conf import settings

from agents.budgets import Budget
from agents.tools import Tool, ToolError, _schema
from integrations.jail import (
    CommandResult,
    Jail,
    JailUnavailable,
    limits_from_settings,
)

logger = logging.getLogger(__name__)

MAX_COMMAND_CHARS = 100_000


class JailedCommands:
    """Commands in the jail of `self.root` (a Sandbox's worktree)."""

    root: Path
    _jail: Jail | None
    allowed_commands: frozenset[str] | None
    role: str | None = None
    on_output: Callable[[str], None] | None = None

    @property
    def jail(self) -> Jail:
        """The jail commands run in; JailUnavailable when none can run here."""
        if self._jail is None:
            self._jail = Jail.for_worktree(self.root)
        return self._jail

    @property
    def command_timeout(self) -> float:
        """A command's timeout when the call asks for none."""
        return self.jail.limits.wall_seconds

    @property
    def max_command_timeout(self) -> float:
        """The longest timeout a call may ask for: CODEX_SANDBOX_MAX_COMMAND_
        TIMEOUT, within the role's time budget (a command cannot outlast the
        run), and never less than the default."""
        cap = float(settings.CODEX_SANDBOX_MAX_COMMAND_TIMEOUT)
        if self.role:
            cap = min(cap, Budget.from_settings(self.role).max_seconds)
        return max(_safe_limit(self), cap)

    def run_command(
        self,
        command: str | list[str],
        cwd: str = ".",
        timeout: float | None = None,
        *,
        outputs: Path | None = None,
    ) -> CommandResult:
        """Run a program and its arguments (no shell) in the jail, in `cwd`.
        With an allow-list, only its programs."""
        argv = shlex.split(command) if isinstance(command, str) else list(command)
        if not argv or not all(isinstance(arg, str) for arg in argv):
            raise ToolError("command must be a non-empty list of strings")
        if any("\x00" in arg for arg in argv):
            raise ToolError("command contains a NUL byte")
        program = argv[0]
        if self.allowed_commands is not None and (
            "/" in program or program not in self.allowed_commands
        ):
            allowed = ", ".join(sorted(self.allowed_commands)) or "none"
            raise ToolError(
                f"{program!r} is not an allowed command (allowed: {allowed})"
            )
        jail = self._usable_jail()
        if jail.which(program) is None:
            raise ToolError(f"{program!r} is not installed")
        return self._run(jail, argv, cwd, timeout, outputs)

    def run_shell(
        self, command: str, cwd: str = ".", timeout: float | None = None
    ) -> CommandResult:
        """Run a bash command line in the jail, in `cwd`."""
        if not isinstance(command, str) or not command.strip():
            raise ToolError("command must be a non-empty string")
        if "\x00" in command:
            raise ToolError("command contains a NUL byte")
        if len(command) > MAX_COMMAND_CHARS:
            raise ToolError(f"command is longer than {MAX_COMMAND_CHARS} characters")
        return self._run(self._usable_jail(), ["bash", "-c", command], cwd, timeout)

    def _usable_jail(self) -> Jail:
        try:
            return self.jail
        except JailUnavailable as exc:
            raise ToolError(
                f"commands cannot run: {exc.reason} (an operator must fix this: "
                f"{exc.fix})"
            ) from None

    def _run(
        self,
        jail: Jail,
        argv: list[str],
        cwd: str,
        timeout: float | None,
        outputs: Path | None = None,
    ) -> CommandResult:
        workdir = self.resolve(cwd or ".")
        if not workdir.is_dir():
            raise ToolError(f"{cwd!r} is not a directory")
        jail, timeout = self._longer(jail, timeout)
        extra: dict[str, Any] = {}
        sink = self._output_sink()
        if sink is not None:
            extra["on_output"] = sink
        try:
            return jail.run(
                argv,
                cwd=self.relative(workdir),
                timeout=timeout,
                outputs=outputs,
                **extra,
            )
        except ValueError as exc:  # a timeout that is no finite positive number
            raise ToolError(str(exc)) from None

    def _longer(self, jail: Jail, timeout: float | None) -> tuple[Jail, float | None]:
        """The jail for a call asking `timeout`: past the jail's own wall time
        (and up to `max_command_timeout`), a copy with its wall and CPU time
        raised; otherwise the jail itself (it caps and checks `timeout`)."""
        if timeout is None or isinstance(timeout, bool):
            return jail, timeout
        try:
            seconds = float(timeout)
        except (TypeError, ValueError):
            raise ToolError("a timeout must be a number of seconds") from None
        if not math.isfinite(seconds) or seconds <= jail.limits.wall_seconds:
            return jail, timeout
        limit = self.max_command_timeout
        if seconds > limit:
            raise ToolError(f"timeout {seconds:g}s is more than the {limit:g}s allowed")
        limits = dataclasses.replace(
            jail.limits,
            wall_seconds=seconds,
            cpu_seconds=max(jail.limits.cpu_seconds, math.ceil(seconds)),
        )
        return dataclasses.replace(jail, limits=limits), None

    def _output_sink(self) -> Callable[[bytes], None] | None:
        """`on_output` fed decoded text (a character split between two chunks
        is held back); its failures are logged, never the command's."""
        deliver = self.on_output
        if deliver is None:
            return None
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

        def sink(chunk: bytes) -> None:
            text = decoder.decode(chunk)
            if text:
                try:
                    deliver(text)
                except Exception:  # noqa: BLE001 (a log must not stop a command)
                    logger.warning("on_output failed", exc_info=True)

        return sink

    # -- as model tools -----------------------------------------------------

    def _answer(self, result: CommandResult) -> str:
        """The tool's answer: how the command ended, then its output. A
        non-zero exit is an answer too (the model reads the failure)."""
        status = result.note if result.timed_out else f"exit code {result.exit_code}"
        text = f"{status}\n{result.output}"
        if result.timed_out or result.exit_code != 0:
            raise ToolError(text)
        return text

    def _shell_tool(self, arguments: dict[str, Any]) -> str:
        return self._answer(
            self.run_shell(
                arguments["command"],
                cwd=arguments.get("cwd") or ".",
                timeout=arguments.get("timeout"),
            )
        )

    def _run_tool(self, arguments: dict[str, Any]) -> str:
        return self._answer(
            self.run_command(
                arguments["command"],
                cwd=arguments.get("cwd") or ".",
                timeout=arguments.get("timeout"),
            )
        )

    def _command_tool(self) -> Tool:
        default = int(_safe_limit(self))
        limit = int(self.max_command_timeout)
        timeout = {
            "type": "number",
            "exclusiveMinimum": 0,
            "maximum": limit,
            "description": f"seconds; {default} unless given, at most {limit}",
        }
        cwd = {"type": "string", "default": ".", "description": "relative folder"}
        if self.allowed_commands is None:
            return Tool(
                "bash",
                "Run a bash command line in the worktree (the current folder, "
                "/workspace) inside an isolated jail: no network, no secrets, "
                "only the worktree is writable and nothing outside it persists. "
                "Answers the exit code and the output (long output keeps its "
                "beginning and its end). git is not available here; Codex "
                f"commits for you. A command stops after {default}s unless you "
                f"set timeout (at most {limit}s) for a long build or test run.",
                _schema(
                    {
                        "command": {"type": "string", "minLength": 1},
                        "cwd": cwd,
                        "timeout": timeout,
                    },
                    ["command"],
                ),
                self._shell_tool,
            )
        return Tool(
            "run_command",
            "Run an allowed program in the worktree, without a shell, inside an "
            "isolated jail (allowed: "
            f"{', '.join(sorted(self.allowed_commands)) or 'none'}). No network "
            f"and no secrets are available to it. It stops after {default}s "
            f"unless you set timeout (at most {limit}s).",
            _schema(
                {
                    "command": {
                        "type": "array",
                        "items": {"type": "string"},
                        "minItems": 1,
                        "description": "program and arguments",
                    },
                    "cwd": cwd,
                    "timeout": timeout,
                },
                ["command"],
            ),
            self._run_tool,
        )


def _safe_limit(sandbox: JailedCommands) -> float:
    """The configured timeout, without building a jail that cannot run (the
    tool is still offered; a call then says why commands cannot run)."""
    try:
        return sandbox.jail.limits.wall_seconds
    except JailUnavailable:
        return limits_from_settings().wall_seconds
