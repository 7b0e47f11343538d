"""What a tool is to the runtime: a `Tool` (its API definition and its
handler) and what one call of it gives back.

Each call returns a `ToolOutcome`: the text for the model, whether it is an
error, and a `ToolRecord` (tool, success, error, metadata, files changed) the
caller logs as a tool event (docs/domain/fleet.md#tool-events).

A tool with a `timeout` runs in a thread of its own and the call returns an
error at that wall time whatever the handler does; the handler sees its
deadline through `time_left()`/`check_time()` and stops there by itself.

The worktree's tools (files and commands, confined to the worktree) are in
agents.sandbox; the pipeline's own tools in agents.domain_tools.
"""

from __future__ import annotations

import functools
import json
import logging
import math
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import jsonschema

logger = logging.getLogger(__name__)

# After its deadline a handler gets this long to return its own answer (a
# partial one, or why it stopped) before the call gives up on it.
GRACE_SECONDS = 0.5

# The deadline of the tool call running in this thread.
_call = threading.local()


class ToolError(Exception):
    """A refused or failed tool call; its message goes back to the model."""


@dataclass
class ToolRecord:
    """One tool call, as the caller logs it (a tool event:
    docs/domain/fleet.md#tool-events)."""

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
    a (text, files_changed) pair; it raises ToolError to refuse. `timeout`:
    the call's wall-time limit in seconds (None: the handler bounds itself,
    as commands do in the jail, or needs the caller's thread, as the
    database does).
    """

    name: str
    description: str
    input_schema: dict[str, Any]
    handler: Callable[[dict[str, Any]], str | tuple[str, Iterable[str]]]
    timeout: float | None = None

    def definition(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "input_schema": self.input_schema,
        }

    def call(self, arguments: Mapping[str, Any]) -> ToolOutcome:
        """Validate the input against the tool's schema, then run the handler;
        refusals, invalid input and crashes become error outcomes."""
        problem = input_problem(self.input_schema, arguments)
        if problem:
            return _failure(self.name, f"invalid input: {problem}", arguments)
        if self.timeout is None:
            return self._run(arguments)
        return self._run_limited(arguments, self.timeout)

    def _run_limited(self, arguments: Mapping[str, Any], limit: float) -> ToolOutcome:
        """`_run` in a thread of its own, given up at `limit` seconds: a file
        tool stuck on something (a pipe, a slow disk) must not hang the
        worker. A thread cannot be killed; given up, it finishes unwatched."""
        outcomes: list[ToolOutcome] = []

        def work() -> None:
            _call.deadline = time.monotonic() + limit
            outcomes.append(self._run(arguments))

        worker = threading.Thread(target=work, name=f"tool-{self.name}", daemon=True)
        worker.start()
        worker.join(limit + GRACE_SECONDS)
        if outcomes:
            return outcomes[0]
        logger.warning("tool %s gave no answer within %ss", self.name, limit)
        return _failure(
            self.name,
            f"{self.name} took longer than its {limit:g}s limit and was stopped; "
            "narrow the request (a smaller path or range)",
            arguments,
        )

    def _run(self, arguments: Mapping[str, Any]) -> ToolOutcome:
        try:
            answer = self.handler(dict(arguments))
        except ToolError as exc:
            return _failure(self.name, str(exc), arguments)
        except Exception as exc:  # noqa: BLE001 (any crash is the model's error)
            # A tool that crashes must not end the run: the model reads the
            # error and works around it; the log keeps the traceback.
            logger.warning("tool %s crashed", self.name, exc_info=True)
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


def time_left() -> float:
    """Seconds left before the current tool call's limit (infinite outside
    a call with a timeout)."""
    deadline = getattr(_call, "deadline", None)
    return math.inf if deadline is None else deadline - time.monotonic()


def check_time(doing: str) -> None:
    """Raise ToolError once the current call's time is up; `doing` says what
    was stopped (the answer names it)."""
    if time_left() <= 0:
        raise ToolError(f"stopped at the tool's time limit while {doing}")


def input_problem(schema: Mapping[str, Any], arguments: Any) -> str:
    """Why `arguments` do not fit `schema` (JSON Schema, checked by the
    jsonschema library), "" when they do. Numbers must be finite: JSON Schema
    lets NaN through every bound, and a NaN timeout would be no limit."""
    if not isinstance(arguments, Mapping):
        return "the input must be an object"
    if not finite(arguments):
        return "numbers must be finite (NaN and Infinity are refused)"
    error = jsonschema.exceptions.best_match(
        schema_validator(schema).iter_errors(dict(arguments))
    )
    if error is None:
        return ""
    where = "/".join(str(part) for part in error.absolute_path)
    return f"{where}: {error.message}" if where else error.message


def finite(value: Any) -> bool:
    """Whether every number in `value` (nested too) is finite."""
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, Mapping):
        return all(finite(item) for item in value.values())
    if isinstance(value, list | tuple):
        return all(finite(item) for item in value)
    return True


@functools.lru_cache(maxsize=256)
def _cached_validator(schema_json: str) -> jsonschema.protocols.Validator:
    schema = json.loads(schema_json)
    validator_class = jsonschema.validators.validator_for(
        schema, default=jsonschema.Draft202012Validator
    )
    return validator_class(schema)


def schema_validator(schema: Mapping[str, Any]) -> jsonschema.protocols.Validator:
    """A jsonschema validator for `schema` (its draft, else 2020-12), cached."""
    return _cached_validator(json.dumps(schema, sort_keys=True))


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
    """`text` cut to about `limit` characters, keeping its beginning and its
    end (a test run's failure summary is printed last) with a marker of what
    was cut in between, so the model knows to ask for a narrower range."""
    if len(text) <= limit:
        return text
    head = limit // 2
    tail = limit - head
    cut = len(text) - head - tail
    return (
        f"{text[:head]}\n[... {cut} of {len(text)} characters cut here; the "
        f"beginning and the end are shown: narrow the request to see the rest "
        f"...]\n{text[-tail:]}"
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
