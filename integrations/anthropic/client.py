"""The Claude model client: one factory from settings, one `send`, one error type.

This is the only module that imports the `anthropic` SDK
(docs/architecture.md#integrations). Everything above it sees plain data: a
`Response` with the content blocks as dicts, the stop reason, the usage and the
cost of the call (priced by `pricing`); and one failure type,
`ClassifiedFailure`, whose action tells the workers what to do (wait_retry with
the server's retry-after, rotate_token, manual_review, abort). The API key comes
from the caller (the agents pass the credential the configuration app holds).

Retry policy: the SDK sleeps for the server's retry-after, uncapped, before it
retries, which would hold a worker for as long as the API asks. So the client
makes at most one retry itself (`max_retries` 0 by default, 1 at most) and a
rate limit or overload goes back to the workers as wait_retry, which requeue
the step after the delay instead of sleeping.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import ssl
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import anthropic
import httpx2
from django.conf import settings

from codex.core.errors import (
    Action,
    ClassifiedError,
    ClassifiedFailure,
    ErrorKind,
    classify_http,
    classify_kind,
    make_error,
    parse_retry_after,
)
from integrations.anthropic.pricing import Price, Usage, cost_of, price_for, price_table

SOURCE = "claude"

# Each role's model, from the provider's current list (the models overview,
# November 2026): Opus for the roles that plan and judge code, Sonnet for the
# ones that write and check it, Haiku for release notes. CODEX_MODEL sets one
# model for every role; CODEX_MODEL_<ROLE> sets one role's (README).
DEFAULT_MODEL = "claude-sonnet-5-5"
ROLE_MODELS = {
    "product_manager": "claude-sonnet-5-5",
    "planner": "claude-opus-5-5",
    "developer": "claude-sonnet-5-5",
    "qa": "claude-sonnet-5-5",
    "reviewer": "claude-opus-5-5",
    "release": "claude-haiku-4-5",
}
DEFAULT_TIMEOUT_SECONDS = 300
# The most a reply may hold, per model family (the models overview's "Max
# output"): a run asks for all of it, so a large file write is not cut off.
# Longest prefix first; anything unknown gets DEFAULT_MAX_TOKENS.
MAX_OUTPUT_TOKENS: tuple[tuple[str, int], ...] = (
    ("claude-opus-4-5", 64_000),
    ("claude-sonnet-4-5", 64_000),
    ("claude-haiku-4-5", 64_000),
    ("claude-opus-4-1", 32_000),
    ("claude-opus-4-0", 32_000),
    ("claude-opus-4-2", 32_000),  # claude-opus-4-20250514
    ("claude-sonnet-4-0", 64_000),
    ("claude-sonnet-4-2", 64_000),
    ("claude-opus-4-6", 128_000),
    ("claude-sonnet-4-6", 128_000),
    ("claude-opus-4-", 128_000),
    ("claude-opus-5", 128_000),
    ("claude-sonnet-5", 128_000),
    ("claude-haiku-5", 128_000),
    ("claude-fable-5", 128_000),
)
DEFAULT_MAX_TOKENS = 32_000
MAX_RETRIES_CAP = 1
# SDK clients kept per process (_shared_sdk); past this many distinct
# configurations (rotated keys, tests changing settings) the cache starts over.
SHARED_SDK_LIMIT = 8


class ModelNotConfigured(Exception):
    """No API key is configured: the task should block with this message."""


# -- responses --------------------------------------------------------------


@dataclass(frozen=True)
class Response:
    """One model reply as plain data: content blocks are dicts, ready to be sent
    back as the assistant turn of the conversation."""

    id: str
    model: str
    content: list[dict[str, Any]]
    stop_reason: str | None
    usage: Usage
    cost_usd: Decimal
    stop_details: dict[str, Any] | None = None
    # tool_use id -> why its input could not be read (the model wrote a tool
    # call whose input is not JSON); such a block's input is {} here.
    invalid_tool_inputs: dict[str, str] = field(default_factory=dict)

    @property
    def text(self) -> str:
        return "".join(
            block.get("text", "") for block in self.content if block["type"] == "text"
        )

    @property
    def tool_uses(self) -> list[dict[str, Any]]:
        return [block for block in self.content if block["type"] == "tool_use"]


# -- errors -----------------------------------------------------------------


def _retry_after(headers: Mapping[str, str]) -> int | None:
    """The server's delay: retry-after (seconds or a date), else retry-after-ms."""
    seconds = parse_retry_after(headers.get("retry-after"))
    if seconds is not None:
        return seconds
    try:
        millis = float(headers.get("retry-after-ms") or "")
    except ValueError:
        return None
    return max(0, math.ceil(millis / 1000))


def classify_sdk_error(exc: BaseException) -> ClassifiedError:
    """Turn an `anthropic` exception into the one classified error.

    429, 529 and 5xx wait with the server's retry-after; 401 rotates the key;
    403 goes to a person (the key lacks a permission no retry can grant);
    400 and other 4xx abort with the body's message; a lost connection or a
    timeout waits; a response that does not parse aborts.
    """
    if isinstance(exc, anthropic.APIStatusError):
        headers = dict(exc.response.headers)
        status = exc.status_code
        if status == 403:
            detail = exc.api_message or str(exc.body or "")
            return make_error(
                SOURCE,
                status,
                Action.MANUAL_REVIEW,
                f"Permission denied - needs a person to grant access: {detail}",
                original=exc,
            )
        error = classify_http(SOURCE, status, headers=headers, body=exc.body)
        retry_after = error.retry_after
        if error.action is Action.WAIT_RETRY:
            server = _retry_after(headers)
            retry_after = server if server is not None else retry_after
        return make_error(
            SOURCE,
            status,
            error.action,
            error.message,
            retry_after=retry_after,
            original=exc,
        )
    if isinstance(exc, anthropic.APITimeoutError):
        return classify_kind(SOURCE, ErrorKind.TIMEOUT, message=str(exc), original=exc)
    if isinstance(exc, anthropic.APIConnectionError):
        return classify_kind(
            SOURCE, ErrorKind.CONNECTION, message=str(exc), original=exc
        )
    return classify_kind(
        SOURCE, ErrorKind.INVALID_RESPONSE, message=str(exc), original=exc
    )


_CONTEXT_OVERFLOW = re.compile(
    r"prompt is too long|exceeds? (the )?context (limit|window)|context window",
    re.IGNORECASE,
)


def is_context_overflow(error: ClassifiedError) -> bool:
    """Whether the API refused a request because the conversation is longer
    than the model's context window (a 400 such as "prompt is too long:
    210000 tokens > 200000 maximum"): shortening it is the fix, not a retry."""
    return error.code == 400 and bool(_CONTEXT_OVERFLOW.search(error.message or ""))


# -- the client -------------------------------------------------------------


def max_output_tokens(model: str) -> int:
    """The most output tokens `model` may produce in one reply."""
    for prefix, tokens in MAX_OUTPUT_TOKENS:
        if model.startswith(prefix):
            return tokens
    return DEFAULT_MAX_TOKENS


# Roles that think before they act by default: planning, writing and
# reviewing code gain from it; triage, QA's judging and release notes do not
# need it. CODEX_THINKING_<ROLE> overrides: "adaptive" (the model decides how
# much), a number (manual extended thinking with that budget of tokens, for
# models without adaptive thinking), or "off".
THINKING_ROLES = frozenset({"planner", "developer", "reviewer"})


def thinking_for(role: str | None) -> dict[str, Any] | None:
    """The thinking configuration of `role`'s requests, None for none."""
    default = "adaptive" if role in THINKING_ROLES else "off"
    value = default
    if role:
        value = getattr(settings, f"CODEX_THINKING_{role.upper()}", None) or default
    value = str(value).strip().lower()
    if value in ("off", "none", "0", "false", "disabled"):
        return None
    if value.isdigit():
        # The API's minimum budget is 1,024 tokens.
        return {"type": "enabled", "budget_tokens": max(1024, int(value))}
    return {"type": "adaptive"}


def effort_for(role: str | None) -> str | None:
    """CODEX_EFFORT_<ROLE> (low, medium, high, xhigh, max), else the model's
    default (None)."""
    if not role:
        return None
    value = getattr(settings, f"CODEX_EFFORT_{role.upper()}", None)
    return str(value) if value else None


def model_for(role: str | None = None) -> str:
    """CODEX_MODEL_<ROLE> if set, else CODEX_MODEL if set, else the role's
    default (ROLE_MODELS), else DEFAULT_MODEL."""
    if role:
        override = getattr(settings, f"CODEX_MODEL_{role.upper()}", None)
        if override:
            return str(override)
    chosen = getattr(settings, "CODEX_MODEL", None)
    if chosen:
        return str(chosen)
    return ROLE_MODELS.get(role or "", DEFAULT_MODEL)


def _new_sdk(
    api_key: str,
    base_url: str | None,
    timeout: float,
    max_retries: int,
    http_client: Any = None,
) -> anthropic.Anthropic:
    # api_key is always explicit: the SDK would otherwise read profiles and
    # federation files from the worker's disk and environment.
    return anthropic.Anthropic(
        api_key=api_key,
        base_url=base_url or None,
        timeout=timeout,
        max_retries=max_retries,
        http_client=http_client or _HttpClient(verify=tls_context()),
    )


class _HttpClient(anthropic.DefaultHttpxClient):
    """The SDK's default HTTP client (its timeouts, limits, keep-alive),
    closed when dropped as the SDK's own is: a shared SDK client dropped
    from _shared must not leave its connections open."""

    def __del__(self) -> None:
        if not self.is_closed:
            # At interpreter exit closing can fail: nothing is left to do then.
            with contextlib.suppress(Exception):
                self.close()


_tls: list[ssl.SSLContext] = []


def tls_context() -> ssl.SSLContext:
    """The TLS context this process's SDK clients verify the API with: the
    HTTP client's default (the system's CA bundle, or SSL_CERT_FILE), made
    once. Loading the bundle is most of making a client (about 0.2 s of CPU on
    a slow machine); the cluster's sentinel makes it before it forks the
    workers (agents.worker_warm_up), so each worker inherits it rather than
    load the bundle itself. A context holds no connection: sharing it across
    a fork is safe, unlike a client."""
    if not _tls:
        _tls.append(httpx2.create_ssl_context())
    return _tls[0]


_shared: dict[tuple, anthropic.Anthropic] = {}
_shared_lock = threading.Lock()


def _shared_sdk(
    api_key: str, base_url: str | None, timeout: float, max_retries: int
) -> anthropic.Anthropic:
    """One SDK client per process and configuration. Building one builds an
    httpx client and its TLS context (loading the CA bundle: ~30 ms of CPU),
    which a worker would otherwise pay on every step; a shared one also keeps
    its connections to the API alive between steps. Keyed by the process id
    as well: a forked worker must not use its parent's connections."""
    key = (os.getpid(), api_key, base_url or None, timeout, max_retries)
    with _shared_lock:
        sdk = _shared.get(key)
        if sdk is None:
            if len(_shared) >= SHARED_SDK_LIMIT:
                # Not closed: a client handed out earlier may still be sending.
                _shared.clear()
            sdk = _shared[key] = _new_sdk(api_key, base_url, timeout, max_retries)
        return sdk


class ModelClient:
    """A configured Messages API client. `send` is the one call."""

    def __init__(
        self,
        *,
        api_key: str,
        base_url: str | None = None,
        model: str = DEFAULT_MODEL,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
        max_retries: int = 0,
        prices: Mapping[str, Price] | None = None,
        http_client: Any = None,
    ) -> None:
        if not api_key:
            raise ModelNotConfigured(
                "No ANTHROPIC_API_KEY is configured: the agents cannot run"
            )
        self.model = model
        self.prices = dict(prices) if prices is not None else price_table()
        retries = max(0, min(int(max_retries), MAX_RETRIES_CAP))
        # A caller's own http_client (a test's mock transport) gets an SDK
        # client of its own, which close() closes; otherwise the process's
        # shared one for these settings, which stays open.
        self._owns_sdk = http_client is not None
        if self._owns_sdk:
            self._sdk = _new_sdk(
                api_key, base_url, float(timeout), retries, http_client
            )
        else:
            self._sdk = _shared_sdk(api_key, base_url, float(timeout), retries)

    @property
    def max_retries(self) -> int:
        return self._sdk.max_retries

    @property
    def base_url(self) -> str:
        return str(self._sdk.base_url)

    def close(self) -> None:
        """Release the SDK client if it is this client's own (the shared one
        stays open for the next step of this process)."""
        if self._owns_sdk:
            self._sdk.close()

    def send(
        self,
        *,
        messages: Sequence[Mapping[str, Any]],
        system: str | Sequence[Mapping[str, Any]] | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        model: str | None = None,
        max_tokens: int | None = None,
        thinking: Mapping[str, Any] | None = None,
        effort: str | None = None,
    ) -> Response:
        """One Messages API call, streamed (so a long reply is not cut by a
        read timeout, and a reply may use the model's whole output budget:
        `max_tokens` None asks for `max_output_tokens(model)`). `thinking` is
        the thinking configuration ({"type": "adaptive"}, or "enabled" with
        budget_tokens), `effort` the output effort (low ... max). Raises
        ClassifiedFailure on any SDK error."""
        chosen = model or self.model
        kwargs: dict[str, Any] = {
            "model": chosen,
            "max_tokens": max_tokens or max_output_tokens(chosen),
            "messages": list(messages),
        }
        if system:
            kwargs["system"] = system if isinstance(system, str) else list(system)
        if tools:
            kwargs["tools"] = list(tools)
        if thinking:
            kwargs["thinking"] = dict(thinking)
        if effort:
            kwargs["output_config"] = {"effort": effort}
        invalid: dict[str, str] = {}
        try:
            with self._sdk.messages.stream(**kwargs) as stream:
                try:
                    message = stream.get_final_message()
                except ValueError as exc:
                    # The SDK gives up mid-stream on a tool call whose input
                    # is not JSON: keep the reply up to that call, which the
                    # agent loop answers as an error instead of crashing.
                    message = stream.current_message_snapshot
                    invalid = _invalid_tool_input(message, exc)
        except anthropic.AnthropicError as exc:
            raise ClassifiedFailure(classify_sdk_error(exc)) from exc
        usage = Usage.from_api(message.usage)
        stop_details = getattr(message, "stop_details", None)
        content = [
            block.model_dump(mode="json", exclude_none=True)
            for block in message.content
        ]
        for block in content:
            if block.get("id") in invalid:
                block["input"] = {}
        return Response(
            id=message.id,
            model=message.model,
            content=content,
            stop_reason="tool_use" if invalid else message.stop_reason,
            usage=usage,
            cost_usd=cost_of(usage, price_for(chosen, self.prices)),
            stop_details=(
                stop_details.model_dump(mode="json", exclude_none=True)
                if stop_details is not None
                else None
            ),
            invalid_tool_inputs=invalid,
        )


def _invalid_tool_input(message: Any, error: ValueError) -> dict[str, str]:
    """The tool call the stream broke on (the reply's last block): its id and
    the parser's complaint, without the SDK's advice to the programmer."""
    blocks = list(getattr(message, "content", None) or [])
    if not blocks or getattr(blocks[-1], "type", "") != "tool_use":
        raise error  # not the accumulator's tool-input failure: a real bug
    detail = str(error)
    if "Error: " in detail:
        detail = detail.split("Error: ", 1)[1]
    return {blocks[-1].id: f"its input is not valid JSON ({detail[:300]})"}


def model_client(
    *, api_key: str | None, role: str | None = None, http_client: Any = None
) -> ModelClient:
    """The client the settings describe, for `role` (its model override), with
    `api_key` (its caller's current credential for SOURCE).

    Raises ModelNotConfigured when there is no API key.
    """
    if not api_key:
        raise ModelNotConfigured(
            "No ANTHROPIC_API_KEY is configured: set it to let the agents run"
        )
    return ModelClient(
        api_key=api_key,
        base_url=getattr(settings, "ANTHROPIC_BASE_URL", None) or None,
        model=model_for(role),
        timeout=float(
            getattr(settings, "CODEX_MODEL_TIMEOUT_SECONDS", DEFAULT_TIMEOUT_SECONDS)
        ),
        max_retries=int(getattr(settings, "CODEX_MODEL_MAX_RETRIES", 0)),
        http_client=http_client,
    )
