"""The tool-use loop every role runs, inside budgets.

`run_agent` sends the conversation, executes the `tool_use` blocks of each
reply, answers with `tool_result` blocks (`is_error` on failure) and goes on
until the role calls `submit_result` with an object that satisfies its JSON
schema. It stops early, with a reason the caller turns into an escalation or a
failure, when a budget runs out (turns, tokens, cost: hard caps), the model
refuses, invalid results or replies without a result repeat, or the model
client raises a classified error it should not wait out in place.

Transient model errors (wait_retry: 429, 529, 5xx, a dropped connection) are
retried inside the conversation, so a hiccup at turn 30 does not throw away
29 turns of work: the same request is sent again after the server's
retry-after (never earlier; up to a fifth later, so that conversations limited
together do not come back together), or after an exponential backoff with
jitter when the server named no delay. This is bounded twice: at most
`Budget.model_retries` in-place retries per run (CODEX_MODEL_INLINE_RETRIES),
and never a wait longer than `Budget.model_retry_max_wait`
(CODEX_MODEL_INLINE_WAIT_SECONDS). A server asking for longer, or a run out
of in-place retries, ends the run with the error as before, and the worker
requeues the step after the server's delay (a worker is not held for as long
as the API asks; the task's own retry limit bounds the requeues). So one run
sends at most turns + model_retries requests.

The budgets are in agents.budgets; result validation, prompt caching and
compaction in agents.conversation; the outcome of a run in agents.run_outcome.
"""

from __future__ import annotations

import copy
import random
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from decimal import Decimal
from typing import Any, Protocol

from agents.budgets import Budget
from agents.conversation import compact, history_chars, validate, with_cache_breakpoints
from agents.prompts import untrusted
from agents.run_outcome import (
    BUDGET_ESCALATION_CODE,  # noqa: F401 (imported from here too)
    Kind,
    RunMetrics,
    RunOutcome,
)
from agents.tools import Tool, ToolOutcome, ToolRecord, cap_text
from codex.core.backoff import backoff_seconds
from codex.core.errors import Action, ClassifiedError, ClassifiedFailure
from integrations.anthropic.client import Response

SUBMIT_RESULT = "submit_result"


class ModelClient(Protocol):
    def send(
        self,
        *,
        messages: Sequence[Mapping[str, Any]],
        system: Any = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        model: str | None = None,
        max_tokens: int | None = ...,
        thinking: Mapping[str, Any] | None = ...,
        effort: str | None = ...,
    ) -> Response: ...


# -- the loop ---------------------------------------------------------------

WRAP_UP = (
    "Budget nearly used up: stop exploring, finish the essential work and call "
    "submit_result now with what you have."
)
NUDGE = (
    "You ended your turn without calling submit_result. Your work is only "
    "recorded when you call submit_result with the result object; do that now."
)
CONTINUE = (
    "Your reply was cut off at the output limit. Any tool calls in it were not "
    "run. Continue, in smaller steps."
)
LAST_CHANCE = (
    "{reason}. This is the last chance in this run: finish the work and call "
    "submit_result with an object matching its schema."
)
CONTINUE_AFTER_COMPACTION = (
    "The conversation reached the model's context limit; older tool outputs "
    "were removed. Continue from where you were."
)


def submit_tool(schema: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "name": SUBMIT_RESULT,
        "description": (
            "Submit the result of your work. Call it exactly once, when done, with "
            "an object matching this schema; an invalid object is returned to you "
            "with the errors."
        ),
        "input_schema": dict(schema),
    }


class _Run:
    """The state of one run of `run_agent`."""

    def __init__(
        self,
        client: ModelClient,
        *,
        system: str | Sequence[Mapping[str, Any]],
        tools: Iterable[Tool],
        prompt: str | Sequence[Mapping[str, Any]],
        result_schema: Mapping[str, Any],
        budget: Budget,
        model: str | None,
        on_tool: Callable[[ToolRecord], None] | None,
        clock: Callable[[], float],
        sleep: Callable[[float], None] = time.sleep,
        thinking: Mapping[str, Any] | None = None,
        effort: str | None = None,
        interjection: Callable[[], str] | None = None,
    ) -> None:
        self.client = client
        self.thinking = dict(thinking) if thinking else None
        self.effort = effort
        self.interjection = interjection
        self.sleep = sleep
        self.model_retries = 0  # in-place retries so far, this run
        self.failures_in_a_row = 0
        self.system = (
            [{"type": "text", "text": system}]
            if isinstance(system, str)
            else [dict(block) for block in system]
        )
        self.tools = {tool.name: tool for tool in tools}
        if SUBMIT_RESULT in self.tools:
            raise ValueError(f"{SUBMIT_RESULT} is the runtime's own tool")
        self.definitions = [tool.definition() for tool in self.tools.values()]
        self.definitions.append(submit_tool(result_schema))
        self.schema = result_schema
        self.budget = budget
        self.model = model
        self.on_tool = on_tool
        self.clock = clock
        self.started = clock()
        self.metrics = RunMetrics()
        self.records: list[ToolRecord] = []
        content = prompt if isinstance(prompt, str) else list(prompt)
        self.messages: list[dict[str, Any]] = [{"role": "user", "content": content}]
        self.invalid = 0
        self.nudged = False
        self.second_chance_used = False
        self.wrapped_up = False

    def outcome(self, kind: str, reason: str = "", **extra: Any) -> RunOutcome:
        return RunOutcome(
            kind=kind,
            reason=reason,
            metrics=self.metrics,
            records=self.records,
            messages=self.messages,
            **extra,
        )

    # -- budgets

    def exhausted(self) -> str:
        """The budget that ran out, or ""."""
        b, m = self.budget, self.metrics
        if m.turns >= b.max_turns:
            return f"turn budget exhausted ({m.turns} of {b.max_turns} turns)"
        spent = b.exhausted_by(cost_usd=m.cost_usd, tokens=m.tokens)
        if spent:
            return spent
        elapsed = self.clock() - self.started
        if elapsed >= b.max_seconds:
            return f"time budget exhausted ({elapsed:.0f}s of {b.max_seconds:g}s)"
        return ""

    def near_end(self) -> bool:
        b, m, f = self.budget, self.metrics, self.budget.wrap_up_at
        return (
            m.turns >= b.max_turns * f
            or m.tokens >= b.token_cap * f
            or m.cost_usd >= b.cost_cap * Decimal(str(f))
            or self.clock() - self.started >= b.max_seconds * f
        )

    # -- conversation

    def add_user(self, blocks: list[dict[str, Any]]) -> None:
        """Append a user message, with the wrap-up instruction once when the
        run nears the end of a budget."""
        if not self.wrapped_up and self.near_end():
            self.wrapped_up = True
            blocks = [*blocks, {"type": "text", "text": WRAP_UP}]
        self.messages.append({"role": "user", "content": blocks})

    def compact_if_needed(self, *, force: bool = False) -> bool:
        limit = self.budget.context_chars
        if not force and history_chars(self.messages) <= limit:
            return False
        # Cut to half the limit so the next compaction (a cache miss) is far.
        target = limit // 2 if not force else history_chars(self.messages) // 2
        return compact(
            self.messages,
            target_chars=target,
            keep_recent=1 if force else self.budget.keep_recent_turns,
        )

    def send(self) -> Response:
        system, tools, messages = with_cache_breakpoints(
            self.system, self.definitions, self.messages
        )
        response = self.client.send(
            messages=messages,
            system=system,
            tools=tools,
            model=self.model,
            # None: the model's whole output budget (the client knows it).
            max_tokens=self.budget.max_response_tokens or None,
            thinking=self.thinking,
            effort=self.effort,
        )
        m = self.metrics
        m.turns += 1
        m.usage = m.usage + response.usage
        m.cost_usd += response.cost_usd
        m.response_length += len(response.text)
        return response

    def wait_before_retry(self, error: ClassifiedError) -> float | None:
        """Seconds to wait before sending the failed request again in place, or
        None when the run should end with `error` (not transient, the server
        asks for longer than a worker should be held, or no retry left)."""
        budget = self.budget
        if error.action != Action.WAIT_RETRY:
            return None
        if self.model_retries >= budget.model_retries:
            return None
        if error.retry_after and error.retry_after > budget.model_retry_max_wait:
            return None
        self.model_retries += 1
        self.failures_in_a_row += 1
        if error.retry_after:
            # Never earlier than the server asked; a little later, spread.
            return random.uniform(error.retry_after, error.retry_after * 1.2)
        return backoff_seconds(
            self.failures_in_a_row - 1,
            base=budget.model_retry_base_wait,
            cap=budget.model_retry_max_wait,
        )

    # -- tools

    def call_tool(self, block: Mapping[str, Any]) -> tuple[dict[str, Any], Any]:
        """Run one tool_use block: its tool_result block, and the submitted
        result if this was a valid submit_result."""
        name, arguments = block.get("name", ""), block.get("input") or {}
        submitted = None
        if name == SUBMIT_RESULT:
            errors = (
                validate(arguments, self.schema)
                if isinstance(arguments, dict)
                else ["$: expected object"]
            )
            if errors:
                self.invalid += 1
                message = "Result rejected:\n" + "\n".join(errors[:50])
                outcome = ToolOutcome(
                    message,
                    True,
                    ToolRecord(name, False, message, {"errors": errors[:50]}),
                )
            else:
                submitted = dict(arguments)
                outcome = ToolOutcome("Result accepted.", False, ToolRecord(name, True))
        elif name in self.tools:
            outcome = self.tools[name].call(arguments)
        else:
            known = ", ".join([*self.tools, SUBMIT_RESULT])
            message = f"unknown tool {name!r}; the tools are: {known}"
            outcome = ToolOutcome(
                f"Error: {message}", True, ToolRecord(name or "?", False, message)
            )
        self.metrics.tool_count += 1
        self.metrics.files_changed.update(outcome.record.files_changed)
        self.records.append(outcome.record)
        if self.on_tool is not None:
            self.on_tool(outcome.record)
        content = cap_text(outcome.content, self.budget.tool_output_chars)
        if name != SUBMIT_RESULT:
            # File contents, command output, answers: fenced, as the system
            # prompt says (agents.prompts).
            content = untrusted(f"{name} result", content, raw=True)
        result = {
            "type": "tool_result",
            "tool_use_id": block["id"],
            "content": content,
        }
        if outcome.is_error:
            result["is_error"] = True
        return result, submitted

    # -- the loop

    def run(self) -> RunOutcome:
        while True:
            reason = self.exhausted()
            if reason:
                return self.outcome(Kind.BUDGET_EXHAUSTED, reason)
            self.compact_if_needed()
            try:
                response = self.send()
            except ClassifiedFailure as failure:
                wait = self.wait_before_retry(failure.error)
                if wait is None:
                    return self.outcome(
                        Kind.ERROR, failure.error.message, error=failure.error
                    )
                self.sleep(wait)
                continue  # the same conversation, sent again
            self.failures_in_a_row = 0
            stop = response.stop_reason
            if stop == "refusal":
                details = response.stop_details or {}
                explanation = details.get("explanation") or details.get("category")
                return self.outcome(
                    Kind.REFUSAL,
                    "the model refused the request"
                    + (f": {explanation}" if explanation else ""),
                )
            if stop == "pause_turn":
                # A paused server-side turn: send it back as-is to continue.
                self.messages.append({"role": "assistant", "content": response.content})
                continue
            if stop in ("max_tokens", "model_context_window_exceeded"):
                # A cut-off reply may hold a half-written tool call: keep its
                # text, run none of its tools, and ask the model to go on.
                kept = [b for b in response.content if b["type"] != "tool_use"]
                self.messages.append(
                    {
                        "role": "assistant",
                        "content": kept or [{"type": "text", "text": "(cut off)"}],
                    }
                )
                note = CONTINUE
                if stop == "model_context_window_exceeded":
                    if not self.compact_if_needed(force=True):
                        return self.outcome(
                            Kind.CONTEXT_OVERFLOW,
                            "the conversation exceeds the model's context window "
                            "and cannot be compacted further",
                        )
                    note = CONTINUE_AFTER_COMPACTION
                self.add_user([{"type": "text", "text": note}])
                continue
            self.messages.append({"role": "assistant", "content": response.content})
            uses = response.tool_uses
            if not uses:
                if self.nudged:
                    # Two text-only turns in a row.
                    reason = (
                        "the model ended its turn twice without submitting a result"
                    )
                    if self.second_chance(reason):
                        continue
                    return self.outcome(Kind.NO_RESULT, reason)
                self.nudged = True
                self.add_user([{"type": "text", "text": NUDGE}])
                continue
            # Working again: a later text-only turn gets its own nudge.
            self.nudged = False
            results, submitted = [], None
            for block in uses:
                result, accepted = self.call_tool(block)
                results.append(result)
                if accepted is not None and submitted is None:
                    submitted = accepted
            if submitted is None and self.interjection is not None:
                extra = self.interjection()
                if extra:
                    results.append({"type": "text", "text": extra})
            self.add_user(results)
            if submitted is not None:
                return self.outcome(Kind.SUBMITTED, result=submitted)
            if self.invalid >= self.budget.max_invalid_submissions:
                reason = (
                    f"{self.invalid} invalid results submitted; the last errors: "
                    + results[-1]["content"][:500]
                )
                if self.second_chance(reason):
                    continue
                return self.outcome(Kind.INVALID_RESULT, reason)

    def second_chance(self, reason: str) -> bool:
        """Once per run, a run about to end without a result goes on with
        the reason and a last call to submit. False when it was used."""
        if self.second_chance_used:
            return False
        self.second_chance_used = True
        self.nudged = False
        self.invalid = 0
        text = LAST_CHANCE.format(reason=reason[0].upper() + reason[1:])
        last = self.messages[-1]
        if last["role"] == "user":
            # The tool results just added: the note joins them.
            last["content"] = [*last["content"], {"type": "text", "text": text}]
        else:
            self.add_user([{"type": "text", "text": text}])
        return True


def run_agent(
    client: ModelClient,
    *,
    system: str | Sequence[Mapping[str, Any]],
    prompt: str | Sequence[Mapping[str, Any]],
    result_schema: Mapping[str, Any],
    tools: Iterable[Tool] = (),
    budget: Budget | None = None,
    model: str | None = None,
    on_tool: Callable[[ToolRecord], None] | None = None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    thinking: Mapping[str, Any] | None = None,
    effort: str | None = None,
    interjection: Callable[[], str] | None = None,
) -> RunOutcome:
    """Run one agent session to its submitted result or its stop reason.

    `system` is the role's system prompt (text or blocks, e.g. from
    agents.prompts.system_blocks); `prompt` the first user message; `tools`
    the role's tools (a Sandbox's `tools()` plus role tools); `on_tool` is
    called with each call's record (log it as a tool event); `sleep` waits
    before a transient model error is retried in place; `thinking` and
    `effort` are the role's thinking configuration (None: the model's
    default); `interjection` gives text to add to the next turn (people's
    messages sent while the run works), "" for none. Never raises for model
    or tool failures: the outcome says what happened.
    """
    run = _Run(
        client,
        system=system,
        tools=tools,
        prompt=copy.deepcopy(prompt) if not isinstance(prompt, str) else prompt,
        result_schema=result_schema,
        budget=budget or Budget.from_settings(),
        model=model,
        on_tool=on_tool,
        clock=clock,
        sleep=sleep,
        thinking=thinking,
        effort=effort,
        interjection=interjection,
    )
    return run.run()
