"""Builds the SDK's response models ahead of the first call.

The SDK's pydantic models build their validators lazily, on the first
response that uses each one: about 50-70 ms of CPU in every new process at its
first streamed reply (more on a busy machine). A worker cluster calls
`prepare_response_parsers()` once before it forks its workers, so each worker
(the first ones and every one forked later in place of a recycled one)
inherits them built. It also imports the trace propagators the SDK loads on
its first request (`load_trace_propagators`) and the transport's connection
layer its first client builds (`load_http_transport`).

The stream's snapshot model, `ParsedMessage[ResponseFormatT]`, is a pydantic
generic the SDK subscripts on every reply; pydantic keeps such classes only
while something refers to them, so without `KEPT_GENERICS` each reply built
the class anew once the garbage collector had dropped the last one (about
0.3 ms of CPU per reply).
"""

from __future__ import annotations

import importlib
import typing
from typing import Any

import pydantic
from anthropic.lib.streaming import MessageStreamEvent, ParsedMessageStreamEvent
from anthropic.types import Message, ParsedMessage, RawMessageStreamEvent

# What a streamed reply is parsed into: the raw events, the stream's own
# events (text, thinking, tool input deltas) and the final message.
ROOTS = (Message, RawMessageStreamEvent, MessageStreamEvent, ParsedMessageStreamEvent)


def _stream_snapshot_generics() -> tuple[Any, ...]:
    """The generic classes the SDK's stream subscripts on every reply, made
    once and kept (see the module's docstring); none when this SDK release
    names them differently."""
    try:
        from anthropic.lib.streaming._messages import ResponseFormatT
    except ImportError:
        return ()
    return (ParsedMessage[ResponseFormatT],)


KEPT_GENERICS = _stream_snapshot_generics()


def _models_reachable_from(root: Any) -> list[type[pydantic.BaseModel]]:
    """Every pydantic model a response of type `root` can contain: the fields'
    annotations followed through unions, lists and type aliases."""
    found: list[type[pydantic.BaseModel]] = []
    seen: set[int] = set()
    pending = [root]
    while pending:
        annotation = pending.pop()
        if id(annotation) in seen:
            continue
        seen.add(id(annotation))
        if isinstance(annotation, type) and issubclass(annotation, pydantic.BaseModel):
            found.append(annotation)
            pending.extend(f.annotation for f in annotation.model_fields.values())
            continue
        pending.extend(typing.get_args(annotation))
        alias_value = getattr(annotation, "__value__", None)  # a `type X = ...`
        if alias_value is not None:
            pending.append(alias_value)
    return found


def prepare_response_parsers() -> int:
    """Build every model of a message and of its stream events now; returns
    how many were built (0 when all were already)."""
    built = 0
    for model in [m for root in ROOTS for m in _models_reachable_from(root)]:
        if not model.__pydantic_complete__:
            model.model_rebuild()
            built += 1
    return built


def load_trace_propagators() -> bool:
    """Import OpenTelemetry's propagators now, as the SDK does on its first
    request to put the trace context in the headers: about 0.2 s of CPU in a
    new process (the propagators OTEL_PROPAGATORS names are loaded by the
    import). Returns whether they could be loaded; the SDK sends no trace
    context when they cannot."""
    try:
        importlib.import_module("opentelemetry.propagate")
    except Exception:  # noqa: BLE001 - the SDK logs it and goes on without
        return False
    return True


def load_http_transport() -> None:
    """Import the HTTP transport's connection layer, which the SDK's HTTP
    client imports when the first client is made (in each worker: a client
    holds connections, so one is never shared across a fork)."""
    importlib.import_module("httpcore2")
