"""The model client through the real SDK against the loopback stub: plain
responses, usage and cost, and every failure as the one classified error."""

from __future__ import annotations

import socket
from decimal import Decimal

import httpx2
import pytest

from codex.core.errors import Action, ClassifiedFailure
from integrations.anthropic.client import (
    DEFAULT_MODEL,
    ModelClient,
    ModelNotConfigured,
    model_client,
    model_for,
)
from integrations.anthropic.pricing import (
    FALLBACK_PRICE,
    Price,
    Usage,
    cost_of,
    price_for,
)
from tests.model_stub import error, message, server_sent_events, submit, tool_use


def _send(client, **kwargs):
    return client.send(
        messages=[{"role": "user", "content": "hi"}],
        system=[{"type": "text", "text": "You are a test."}],
        **kwargs,
    )


def test_send_returns_plain_blocks_usage_and_cost(stub, client):
    usage = {
        "input_tokens": 1000,
        "output_tokens": 500,
        "cache_creation_input_tokens": 2000,
        "cache_read_input_tokens": 10_000,
    }
    stub.add(message("Looking.", tool_use("read_file", {"path": "a.py"}), usage=usage))

    response = _send(client, model="claude-sonnet-4-6", max_tokens=1024)

    assert response.stop_reason == "tool_use"
    assert response.text == "Looking."
    assert response.tool_uses[0]["name"] == "read_file"
    assert response.tool_uses[0]["input"] == {"path": "a.py"}
    assert all(isinstance(block, dict) for block in response.content)
    assert response.usage == Usage(1000, 500, 2000, 10_000)
    # 3/M input, 15/M output, 3.75/M cache write, 0.30/M cache read
    assert response.cost_usd == Decimal("0.003") + Decimal("0.0075") + Decimal(
        "0.0075"
    ) + Decimal("0.003")
    sent = stub.requests[0]
    assert sent.headers["authorization"] == "Bearer sk-test-key"
    assert sent.body["model"] == "claude-sonnet-4-6"
    assert sent.body["max_tokens"] == 1024


def test_default_model_is_used_when_none_is_given(stub, client):
    stub.add(submit({"ok": True}))
    _send(client)
    assert stub.bodies[0]["model"] == DEFAULT_MODEL


@pytest.mark.parametrize(
    ("reply", "action", "retry_after"),
    [
        (error(429, retry_after=17), Action.WAIT_RETRY, 17),
        (error(429), Action.WAIT_RETRY, 60),  # spec 000's default wait
        (error(529, retry_after=5), Action.WAIT_RETRY, 5),
        (error(529), Action.WAIT_RETRY, None),  # the workers' backoff decides
        (error(500, retry_after=3), Action.WAIT_RETRY, 3),
        (error(503), Action.WAIT_RETRY, None),
        (error(401, "invalid x-api-key"), Action.ROTATE_TOKEN, None),
        (error(403, "no access to model"), Action.MANUAL_REVIEW, None),
        (error(403, "rate limit", retry_after=9), Action.MANUAL_REVIEW, None),
    ],
)
def test_status_errors_are_classified(stub, client, reply, action, retry_after):
    stub.add(reply)
    with pytest.raises(ClassifiedFailure) as caught:
        _send(client)
    failure = caught.value.error
    assert failure.source == "claude"
    assert failure.code == reply.status
    assert failure.action is action
    assert failure.retry_after == retry_after
    assert failure.recoverable is action.recoverable
    assert failure.original is not None  # the SDK error, for the logs


def test_bad_request_aborts_with_the_bodys_message(stub, client):
    stub.add(error(400, "messages.1.content: tool_use ids must be unique"))
    with pytest.raises(ClassifiedFailure) as caught:
        _send(client)
    assert caught.value.action is Action.ABORT
    assert "tool_use ids must be unique" in caught.value.error.message


def test_retry_after_ms_is_used_when_retry_after_is_missing(stub, client):
    reply = error(529)
    reply.headers["retry-after-ms"] = "2500"
    stub.add(reply)
    with pytest.raises(ClassifiedFailure) as caught:
        _send(client)
    assert caught.value.retry_after == 3


def test_connection_refused_waits():
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    client = ModelClient(api_key="k", base_url=f"http://127.0.0.1:{port}")
    with pytest.raises(ClassifiedFailure) as caught:
        _send(client)
    assert caught.value.action is Action.WAIT_RETRY
    assert caught.value.code == 0
    assert "Network error" in caught.value.error.message


def test_timeout_waits(stub):
    stub.add(message("late", delay=1.0))
    client = ModelClient(api_key="k", base_url=stub.url, timeout=0.2)
    with pytest.raises(ClassifiedFailure) as caught:
        _send(client)
    assert caught.value.action is Action.WAIT_RETRY
    assert "Timed out" in caught.value.error.message


def test_max_retries_is_zero_or_one():
    assert ModelClient(api_key="k", max_retries=5).max_retries == 1
    assert ModelClient(api_key="k", max_retries=-1).max_retries == 0
    assert ModelClient(api_key="k").max_retries == 0


def test_no_key_is_a_clear_error():
    with pytest.raises(ModelNotConfigured, match="ANTHROPIC_API_KEY"):
        ModelClient(api_key="")


def test_an_httpx2_mock_transport_can_stand_in_for_the_server():
    seen = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        # The client streams: the answer is the API's event stream.
        return httpx2.Response(
            200,
            headers={"content-type": "text/event-stream"},
            content=server_sent_events(
                {
                    "id": "msg_1",
                    "type": "message",
                    "role": "assistant",
                    "model": "claude-haiku-4-5",
                    "content": [{"type": "text", "text": "hi"}],
                    "stop_reason": "end_turn",
                    "usage": {"input_tokens": 10, "output_tokens": 2},
                }
            ),
        )

    client = ModelClient(
        api_key="k",
        base_url="http://model.invalid",
        http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
    )
    response = _send(client, model="claude-haiku-4-5")
    assert response.text == "hi"
    assert response.usage == Usage(10, 2, 0, 0)
    assert seen[0].url.path == "/v1/messages"


def test_model_client_reads_the_settings(stub, settings):
    settings.ANTHROPIC_BASE_URL = stub.url
    settings.CODEX_MODEL = "claude-haiku-4-5"
    settings.CODEX_MODEL_PLANNER = "claude-opus-4-6"
    settings.CODEX_MODEL_TIMEOUT_SECONDS = 7
    settings.CODEX_MODEL_MAX_RETRIES = 3

    client = model_client(api_key="sk-from-the-caller", role="planner")
    stub.add(message("ok"))
    _send(client)

    assert client.model == "claude-opus-4-6"
    assert client.max_retries == 1
    assert stub.requests[0].headers["authorization"] == "Bearer sk-from-the-caller"
    assert stub.bodies[0]["model"] == "claude-opus-4-6"
    assert model_for("developer") == "claude-haiku-4-5"


def test_model_client_without_a_key_is_not_configured():
    for missing in (None, ""):
        with pytest.raises(ModelNotConfigured):
            model_client(api_key=missing)


def test_price_table_lookups(settings):
    assert price_for("claude-sonnet-4-6").input == Decimal(3)
    assert price_for("claude-haiku-4-5-20251001").output == Decimal(5)
    assert price_for("some-gateway-model") == FALLBACK_PRICE
    settings.CODEX_MODEL_PRICES = {"some-gateway-model": {"input": 2, "output": 8}}
    assert price_for("some-gateway-model") == Price(
        Decimal(2), Decimal(8), Decimal("2.50"), Decimal("0.2")
    )


def test_cost_arithmetic():
    price = Price.from_base("3", "15")
    cost = cost_of(Usage(1_000_000, 1_000_000, 1_000_000, 1_000_000), price)
    assert cost == Decimal("3") + Decimal("15") + Decimal("3.75") + Decimal("0.3")


def test_a_process_builds_one_sdk_client_per_configuration(stub, settings):
    settings.ANTHROPIC_BASE_URL = stub.url
    first = model_client(api_key="sk-shared", role="planner")
    first.close()  # a worker's step ends: the shared client stays usable
    second = model_client(api_key="sk-shared", role="developer")
    assert second._sdk is first._sdk
    stub.add(message("still open"))
    assert _send(second).text == "still open"

    settings.CODEX_MODEL_TIMEOUT_SECONDS = 7
    assert model_client(api_key="sk-shared")._sdk is not first._sdk
    rotated = model_client(api_key="sk-rotated")
    stub.add(message("ok"))
    _send(rotated)
    assert stub.requests[-1].headers["authorization"] == "Bearer sk-rotated"


def test_a_callers_http_client_is_its_own_and_closed_with_it():
    http = httpx2.Client(transport=httpx2.MockTransport(lambda r: httpx2.Response(500)))
    client = ModelClient(api_key="k", base_url="http://model.invalid", http_client=http)
    assert client._sdk is not ModelClient(api_key="k")._sdk
    client.close()
    assert http.is_closed
