"""The demo's scripted model: a scripted Messages API on loopback.

`manage.py demo` and the tests run the real agents against it, so it ships with
the product (the Docker image leaves tests/ out); tests/model_stub.py
re-exports it under the name the tests know.

The real `anthropic` SDK talks to it over HTTP (its `base_url`), so tests go
through the SDK's own request building, response parsing and error classes.
Replies are scripted in order: message bodies (text and tool_use blocks, a
stop reason, optional usage), error statuses with headers (429/529 with
retry-after), and a dropped connection (`dropped()`: the socket is closed
without an answer, as a crashed gateway would). Every request body is
recorded, so tests can inspect what was sent, cache_control breakpoints
included. A request with `"stream": true` (the client always streams) is
answered with the API's server-sent events (message_start, a start, deltas
and a stop per content block, message_delta, message_stop), text, tool_use
and thinking blocks alike.

When a scripted message gives no usage, the stub computes it from the request
the way prompt caching bills it: the request is cut into segments (each tool,
each system block, each message block, in that order), tokens are estimated
at four characters each, and a prefix ending at a cache_control breakpoint is
written to the stub's cache. The longest cached prefix is billed as
cache_read, the rest up to the last breakpoint as cache_creation, and what
follows the last breakpoint as plain input. It is an estimate, but it has the
property that matters: moving the breakpoints wrongly shows up as misses.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MAX_DELAY_SECONDS = 5.0  # the longest a scripted reply may be held back
_ids = itertools.count(1)


@dataclass
class Reply:
    """One scripted answer. `usage` None means: compute it from the request.
    `delay` holds the answer back (bounded), to exercise client timeouts.
    `drop` closes the connection without answering (after `delay`)."""

    status: int = 200
    body: dict[str, Any] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    usage: dict[str, int] | None = None
    delay: float = 0.0
    drop: bool = False


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    usage: dict[str, int] | None = None


# -- building replies -------------------------------------------------------


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def thinking(value: str, signature: str = "stub-signature") -> dict[str, Any]:
    """A thinking block (extended or adaptive thinking)."""
    return {"type": "thinking", "thinking": value, "signature": signature}


def tool_use(name: str, arguments: Mapping[str, Any], id: str = "") -> dict[str, Any]:
    return {
        "type": "tool_use",
        "id": id or f"toolu_stub_{next(_ids):04d}",
        "name": name,
        "input": dict(arguments),
    }


def malformed_tool_use(name: str, raw_input: str, id: str = "") -> dict[str, Any]:
    """A tool call whose input, as streamed, is `raw_input`: text that need
    not be JSON (models sometimes write a broken one). Streamed replies only."""
    return {
        "type": "tool_use",
        "id": id or f"toolu_stub_{next(_ids):04d}",
        "name": name,
        "input": {},
        "raw_input": raw_input,
    }


def message(
    *content: dict[str, Any] | str,
    stop_reason: str | None = None,
    usage: dict[str, int] | None = None,
    stop_details: dict[str, Any] | None = None,
    delay: float = 0.0,
) -> Reply:
    """A 200 reply. The stop reason defaults to tool_use when a tool is
    called, else end_turn."""
    blocks = [text(item) if isinstance(item, str) else item for item in content]
    if stop_reason is None:
        uses = any(block["type"] == "tool_use" for block in blocks)
        stop_reason = "tool_use" if uses else "end_turn"
    body: dict[str, Any] = {
        "type": "message",
        "role": "assistant",
        "content": blocks,
        "stop_reason": stop_reason,
        "stop_sequence": None,
    }
    if stop_details is not None:
        body["stop_details"] = stop_details
    return Reply(body=body, usage=usage, delay=delay)


def submit(result: Mapping[str, Any], *before: dict[str, Any] | str) -> Reply:
    """A reply calling submit_result with `result`."""
    return message(*before, tool_use("submit_result", result))


ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


def error(
    status: int, message_text: str = "", *, retry_after: str | int | None = None
) -> Reply:
    """An error reply in the API's shape, with retry-after when given."""
    kind = ERROR_TYPES.get(status, "api_error")
    headers = {} if retry_after is None else {"retry-after": str(retry_after)}
    return Reply(
        status=status,
        body={
            "type": "error",
            "error": {"type": kind, "message": message_text or kind},
        },
        headers=headers,
    )


def dropped(delay: float = 0.0) -> Reply:
    """No answer at all: the stub closes the connection once the request is
    read (the SDK raises APIConnectionError)."""
    return Reply(status=0, drop=True, delay=delay)


# -- usage from the request -------------------------------------------------


def _canonical(value: Any) -> Any:
    """`value` without cache_control marks, which move between requests and
    are not part of the cached content."""
    if isinstance(value, dict):
        return {k: _canonical(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_canonical(item) for item in value]
    return value


def segments(body: Mapping[str, Any]) -> list[tuple[Any, bool]]:
    """The request in cache order (tools, system, messages), as (segment,
    is_breakpoint) pairs, one per tool, system block and message block."""
    out: list[tuple[Any, bool]] = []
    for tool in body.get("tools") or []:
        out.append((tool, "cache_control" in tool))
    system = body.get("system")
    if isinstance(system, str):
        out.append((system, False))
    else:
        for block in system or []:
            out.append((block, "cache_control" in block))
    for number, msg in enumerate(body.get("messages") or []):
        content = msg.get("content")
        if isinstance(content, str):
            out.append(({"m": number, "role": msg["role"], "c": content}, False))
            continue
        for block in content:
            segment = {"m": number, "role": msg["role"], "c": block}
            out.append((segment, "cache_control" in block))
    return out


def estimate_tokens(value: Any) -> int:
    return max(1, len(json.dumps(_canonical(value), sort_keys=True)) // 4)


class PromptCache:
    """The server side of prompt caching, by prefix hash."""

    def __init__(self, min_tokens: int = 0) -> None:
        self.entries: set[str] = set()
        self.min_tokens = min_tokens
        self.lock = threading.Lock()

    def usage_for(self, body: Mapping[str, Any]) -> dict[str, int]:
        parts = segments(body)
        digest = hashlib.sha256(str(body.get("model")).encode())
        hashes, tokens, marks = [], [], []
        for index, (segment, is_mark) in enumerate(parts):
            digest.update(json.dumps(_canonical(segment), sort_keys=True).encode())
            hashes.append(digest.copy().hexdigest())
            tokens.append(estimate_tokens(segment))
            if is_mark:
                marks.append(index)
        total = sum(tokens)
        if not marks:
            return {
                "input_tokens": total,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
            }
        last = marks[-1]
        with self.lock:
            hit = max(
                (i for i in range(last + 1) if hashes[i] in self.entries), default=-1
            )
            for mark in marks:
                if sum(tokens[: mark + 1]) >= self.min_tokens:
                    self.entries.add(hashes[mark])
        read = sum(tokens[: hit + 1])
        written = sum(tokens[hit + 1 : last + 1])
        if written < self.min_tokens and hit < 0:
            written = 0  # too short to cache: billed as plain input
        return {
            "input_tokens": total - read - written,
            "cache_creation_input_tokens": written,
            "cache_read_input_tokens": read,
        }


# -- the server -------------------------------------------------------------


class ModelStub:
    """The stub server. Use as a context manager, or start()/stop().

    `responder`, when set, answers requests once the script is used up (e.g.
    a demo that answers every turn the same way); without it a request past
    the end of the script gets a 400 saying so.
    """

    def __init__(
        self,
        replies: Iterable[Reply] = (),
        *,
        responder: Callable[[dict[str, Any]], Reply] | None = None,
        cache_min_tokens: int = 0,
    ) -> None:
        self.script: deque[Reply] = deque(replies)
        self.responder = responder
        self.cache = PromptCache(cache_min_tokens)
        self.requests: list[Recorded] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def add(self, *replies: Reply) -> None:
        with self._lock:
            self.script.extend(replies)

    def start(self) -> ModelStub:
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> ModelStub:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def bodies(self) -> list[dict[str, Any]]:
        return [request.body for request in self.requests]

    @property
    def usages(self) -> list[dict[str, int]]:
        return [r.usage for r in self.requests if r.usage is not None]

    # -- request handling

    def _next_reply(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            if self.script:
                return self.script.popleft()
        if self.responder is not None:
            return self.responder(body)
        return error(400, "model stub: no scripted reply left for this request")

    def _answer(self, path: str, headers: dict[str, str], raw: bytes):
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            return error(400, "model stub: request body is not JSON"), None
        record = Recorded(path=path, headers=headers, body=body)
        with self._lock:
            self.requests.append(record)
        if path.rstrip("/") != "/v1/messages":
            return error(404, f"model stub: no route {path}"), None
        reply = self._next_reply(body)
        if reply.status != 200 or reply.drop:
            return reply, None
        usage = reply.usage or self.cache.usage_for(body)
        if reply.usage is None:
            usage = {
                **usage,
                "output_tokens": estimate_tokens(reply.body.get("content", [])),
            }
        record.usage = usage
        payload = {
            "id": f"msg_stub_{next(_ids):04d}",
            "model": body.get("model", "claude-stub"),
            **reply.body,
            "usage": {
                "input_tokens": 0,
                "output_tokens": 0,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
                **usage,
            },
        }
        answer = Reply(
            status=200, body=payload, headers=reply.headers, delay=reply.delay
        )
        answer.stream = bool(body.get("stream"))
        return answer, usage

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                headers = {k.lower(): v for k, v in self.headers.items()}
                reply, _ = stub._answer(self.path.split("?")[0], headers, raw)
                if reply.delay:
                    time.sleep(min(reply.delay, MAX_DELAY_SECONDS))
                if reply.drop:
                    self.close_connection = True
                    with contextlib.suppress(OSError):
                        self.connection.shutdown(socket.SHUT_RDWR)
                    return
                streamed = getattr(reply, "stream", False)
                if streamed:
                    data = server_sent_events(reply.body)
                else:
                    data = json.dumps(reply.body).encode()
                try:
                    self.send_response(reply.status)
                    self.send_header(
                        "content-type",
                        "text/event-stream" if streamed else "application/json",
                    )
                    self.send_header("content-length", str(len(data)))
                    self.send_header("request-id", f"req_stub_{next(_ids):04d}")
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test)

            def log_message(self, format: str, *args: Any) -> None:
                pass  # keep test output clean

        return Handler


# -- streaming ----------------------------------------------------------------


def _event(kind: str, data: dict[str, Any]) -> bytes:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n".encode()


def _block_events(index: int, block: dict[str, Any]) -> list[bytes]:
    """A content block as the API streams it: start (empty), deltas, stop."""
    kind = block["type"]
    if kind == "text":
        start, deltas = (
            {"type": "text", "text": ""},
            [{"type": "text_delta", "text": block["text"]}],
        )
    elif kind == "tool_use":
        start = {k: v for k, v in block.items() if k != "raw_input"}
        start["input"] = {}
        raw = block.get("raw_input")
        if raw is None:
            raw = json.dumps(block.get("input") or {})
        # In pieces, as the model writes it.
        deltas = [
            {"type": "input_json_delta", "partial_json": raw[i : i + 64]}
            for i in range(0, len(raw), 64)
        ]
    elif kind == "thinking":
        start = {"type": "thinking", "thinking": "", "signature": ""}
        deltas = [
            {"type": "thinking_delta", "thinking": block["thinking"]},
            {"type": "signature_delta", "signature": block.get("signature", "")},
        ]
    else:  # redacted thinking, server tools: whole in the start event
        start, deltas = block, []
    return [
        _event("content_block_start", {"index": index, "content_block": start}),
        *[_event("content_block_delta", {"index": index, "delta": d}) for d in deltas],
        _event("content_block_stop", {"index": index}),
    ]


def server_sent_events(payload: dict[str, Any]) -> bytes:
    """A complete message `payload` as the Messages API's event stream."""
    usage = dict(payload.get("usage") or {})
    start = {
        **{k: v for k, v in payload.items() if k not in ("content", "usage")},
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {**usage, "output_tokens": 1},
    }
    start.pop("stop_details", None)
    events = [_event("message_start", {"message": start})]
    for index, block in enumerate(payload.get("content") or []):
        events.extend(_block_events(index, block))
    delta: dict[str, Any] = {
        "stop_reason": payload.get("stop_reason"),
        "stop_sequence": payload.get("stop_sequence"),
    }
    if payload.get("stop_details") is not None:
        delta["stop_details"] = payload["stop_details"]
    events.append(
        _event(
            "message_delta",
            {"delta": delta, "usage": {"output_tokens": usage.get("output_tokens", 0)}},
        )
    )
    events.append(_event("message_stop", {}))
    return b"".join(events)


# -- a conversation per phase -------------------------------------------------

# The submit_result property only one role's schema has, and its phase.
PHASE_MARKERS = {
    "should_proceed": "intake",
    "plan_md": "planning",
    "commit_message": "implementation",
    "recommendation": "verification",
    "assessment": "review",
    "release_notes": "release",
}


def phase_of(body: Mapping[str, Any]) -> str:
    """The phase a request belongs to, from its submit_result tool's schema
    ("" when none is known)."""
    for tool in body.get("tools") or []:
        if tool.get("name") == "submit_result":
            properties = (tool.get("input_schema") or {}).get("properties") or {}
            for marker, phase in PHASE_MARKERS.items():
                if marker in properties:
                    return phase
    return ""


def turn_of(body: Mapping[str, Any]) -> int:
    """How many times the model has answered in this conversation so far."""
    return sum(1 for m in body.get("messages") or [] if m.get("role") == "assistant")


class PhaseScript:
    """A responder (ModelStub's `responder`) answering each request with the
    reply its phase's script has for its turn: `script()` gives {phase:
    [reply, ...]} and is called per request, so every answer is fresh (new
    tool ids). A phase asked again (a feedback cycle) gets its script again;
    a request past the end of its phase's script gets a 400 saying so.
    Stateless, so safe from the stub's threads."""

    def __init__(self, script: Callable[[], Mapping[str, list[Reply]]]) -> None:
        self.script = script

    def __call__(self, body: dict[str, Any]) -> Reply:
        phase, turn = phase_of(body), turn_of(body)
        replies = self.script().get(phase) or []
        if turn >= len(replies):
            return error(
                400, f"model stub: no scripted reply for {phase or 'this'} turn {turn}"
            )
        return replies[turn]
