"""A ModelClient whose every request is answered with one streamed reply of
the given Messages API events (for the fresh-process tests here)."""

from __future__ import annotations

import json

import httpx2

from integrations.anthropic.client import ModelClient


def streaming_client(events: list[dict]) -> ModelClient:
    """A client answering every request with `events` as server-sent events."""
    body = "".join(
        f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events
    ).encode()
    return ModelClient(
        api_key="sk-test",
        http_client=httpx2.Client(
            transport=httpx2.MockTransport(
                lambda request: httpx2.Response(
                    200, headers={"content-type": "text/event-stream"}, content=body
                )
            )
        ),
    )
