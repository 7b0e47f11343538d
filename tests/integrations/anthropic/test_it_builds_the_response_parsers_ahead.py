"""A worker cluster builds the SDK's response models before it forks its
workers (integrations/anthropic/parsers.py), so no step pays for building
them. Checked in a fresh interpreter: models build once per process."""

from __future__ import annotations

import json
import textwrap

from tests.fresh_process import last_line_of

EVENTS = [
    {
        "type": "message_start",
        "message": {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {
                "input_tokens": 10,
                "output_tokens": 1,
                "cache_read_input_tokens": 4,
                "cache_creation_input_tokens": 2,
            },
        },
    },
    {
        "type": "content_block_start",
        "index": 0,
        "content_block": {"type": "thinking", "thinking": "", "signature": ""},
    },
    {
        "type": "content_block_delta",
        "index": 0,
        "delta": {"type": "thinking_delta", "thinking": "Read the file first."},
    },
    {
        "type": "content_block_delta",
        "index": 0,
        "delta": {"type": "signature_delta", "signature": "c2ln"},
    },
    {"type": "content_block_stop", "index": 0},
    {
        "type": "content_block_start",
        "index": 1,
        "content_block": {"type": "text", "text": ""},
    },
    {
        "type": "content_block_delta",
        "index": 1,
        "delta": {"type": "text_delta", "text": "Reading it."},
    },
    {"type": "content_block_stop", "index": 1},
    {
        "type": "content_block_start",
        "index": 2,
        "content_block": {
            "type": "tool_use",
            "id": "toolu_1",
            "name": "read_file",
            "input": {},
        },
    },
    {
        "type": "content_block_delta",
        "index": 2,
        "delta": {"type": "input_json_delta", "partial_json": '{"path": "a.py"}'},
    },
    {"type": "content_block_stop", "index": 2},
    {
        "type": "message_delta",
        "delta": {"type": "message_delta", "stop_reason": "tool_use"},
        "usage": {"output_tokens": 12},
    },
    {"type": "message_stop"},
]

# Counts the SDK models a streamed reply builds, after `prepare` (or not).
SCRIPT = textwrap.dedent(
    """
    import json, sys
    import anthropic._models as sdk_models
    from tests.integrations.anthropic.streamed import streaming_client
    from integrations.anthropic.parsers import (
        load_trace_propagators,
        prepare_response_parsers,
    )

    events = json.loads(sys.argv[2])

    def every_model():
        found, pending = [], [sdk_models.BaseModel]
        while pending:
            cls = pending.pop()
            found.append(cls)
            pending.extend(cls.__subclasses__())
        return found

    if sys.argv[1] == "prepare":
        prepare_response_parsers()
        load_trace_propagators()
    before = {m for m in every_model() if m.__pydantic_complete__}
    modules_before = set(sys.modules)
    client = streaming_client(events)
    reply = client.send(messages=[{"role": "user", "content": "hi"}])
    assert [b["type"] for b in reply.content] == ["thinking", "text", "tool_use"]
    built = {m for m in every_model() if m.__pydantic_complete__} - before
    imported = sorted(set(sys.modules) - modules_before)
    print(json.dumps([sorted(m.__qualname__ for m in built), imported]))
    """
)


def first_reply(mode: str) -> tuple[list[str], list[str]]:
    """The SDK models built and the modules imported by a process's first
    streamed reply, with (`prepare`) or without (`cold`) the warm-up."""
    built, imported = json.loads(last_line_of(SCRIPT, mode, json.dumps(EVENTS)))
    return built, imported


def test_it_leaves_nothing_for_a_streamed_reply_to_build():
    # The control: a fresh process builds the models at its first reply.
    assert len(first_reply("cold")[0]) > 5
    assert first_reply("prepare")[0] == [], "built during the reply"


def test_it_leaves_no_trace_propagator_for_the_first_request_to_import():
    # The control: the SDK imports OpenTelemetry's propagators on its first
    # request (about 0.2 s of CPU in a new worker).
    assert "opentelemetry.propagate" in first_reply("cold")[1]
    imported = first_reply("prepare")[1]
    assert [m for m in imported if m.startswith("opentelemetry")] == []
