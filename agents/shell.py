"""The agent's commands: a shell (`bash`), or a repository's allow-listed
programs (`run_command`), run in the task's command jail (integrations.jail,
docs/jail.md). A mixin of agents.sandbox.Sandbox, which holds the worktree
(`root`, `resolve`, `relative`) and the policy (`allowed_commands`)."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from agents.tools import Tool, ToolError, _schema
from integrations.jail import (
    CommandResult,
    Jail,
    JailUnavailable,
    limits_from_settings,
)

MAX_COMMAND_CHARS = 100_000


class JailedCommands:
    """Commands in the jail of `self.root` (a Sandbox's worktree)."""

    root: Path
    _jail: Jail | None
    allowed_commands: frozenset[str] | None

    @property
    def jail(self) -> Jail:
        """The jail commands run in; JailUnavailable when none can run here."""
        if self._jail is None:
            self._jail = Jail.for_worktree(self.root)
        return self._jail

    @property
    def command_timeout(self) -> float:
        return self.jail.limits.wall_seconds

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
        try:
            return jail.run(
                argv, cwd=self.relative(workdir), timeout=timeout, outputs=outputs
            )
        except ValueError as exc:  # a timeout that is no finite positive number
            raise ToolError(str(exc)) from None

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
        limit = int(_safe_limit(self))
        timeout = {
            "type": "number",
            "exclusiveMinimum": 0,
            "maximum": limit,
            "description": f"seconds, at most {limit}",
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
                f"commits for you. Timeout at most {limit}s.",
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
            "and no secrets are available to it.",
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
