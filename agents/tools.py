"""What a tool is to the runtime: a `Tool` (its API definition and its
handler) and what one call of it gives back.

Each call returns a `ToolOutcome`: the text for the model, whether it is an
error, and a `ToolRecord` (tool, success, error, metadata, files changed) the
caller logs as a tool event (spec 004).

The worktree's tools (files and commands, confined to the worktree) are in
agents.sandbox; the pipeline's own tools in agents.domain_tools.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any


class ToolError(Exception):
    """A refused or failed tool call; its message goes back to the model."""


@dataclass
class ToolRecord:
    """One tool call, as the caller logs it (spec 004's tool event)."""

    tool: str
    success: bool
    error: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    files_changed: tuple[str, ...] = ()


@dataclass
class ToolOutcome:
    """What the model gets back (`content`, `is_error`) and what is logged."""

    content: str
    is_error: bool
    record: ToolRecord


@dataclass(frozen=True)
class Tool:
    """A tool the model may call: its API definition and its handler.

    The handler takes the tool's input and returns the text for the model, or
    a (text, files_changed) pair; it raises ToolError to refuse.
    """

    name: str
    description: str
    input_schema: dict[str, Any]
    handler: Callable[[dict[str, Any]], str | tuple[str, Iterable[str]]]

    def definition(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "input_schema": self.input_schema,
        }

    def call(self, arguments: Mapping[str, Any]) -> ToolOutcome:
        """Run the handler; refusals and crashes become error outcomes."""
        try:
            answer = self.handler(dict(arguments))
        except ToolError as exc:
            return _failure(self.name, str(exc), arguments)
        except (OSError, ValueError, TypeError, KeyError, re.error) as exc:
            return _failure(self.name, f"{type(exc).__name__}: {exc}", arguments)
        text, changed = answer if isinstance(answer, tuple) else (answer, ())
        return ToolOutcome(
            content=text,
            is_error=False,
            record=ToolRecord(
                tool=self.name,
                success=True,
                metadata=_metadata(arguments),
                files_changed=tuple(changed),
            ),
        )


def _metadata(arguments: Mapping[str, Any]) -> dict[str, Any]:
    """The call's arguments for the audit log, long values shortened (a write's
    content is in git, not in the event log)."""
    shown: dict[str, Any] = {}
    for key, value in arguments.items():
        if isinstance(value, str) and len(value) > 200:
            shown[key] = f"{value[:200]}... ({len(value)} chars)"
        else:
            shown[key] = value
    return shown


def _failure(tool: str, message: str, arguments: Mapping[str, Any]) -> ToolOutcome:
    return ToolOutcome(
        content=f"Error: {message}",
        is_error=True,
        record=ToolRecord(
            tool=tool, success=False, error=message, metadata=_metadata(arguments)
        ),
    )


def cap_text(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, with a note saying how much was left
    out so the model knows to ask for a narrower range."""
    if len(text) <= limit:
        return text
    return (
        f"{text[:limit]}\n[output truncated: showing the first {limit} of "
        f"{len(text)} characters; narrow the request to see the rest]"
    )


def _schema(
    properties: dict[str, Any], required: list[str] | None = None
) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": required or [],
        "additionalProperties": False,
    }
