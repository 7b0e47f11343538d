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
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Protocol

from agents.budgets import Budget
from agents.conversation import (  # noqa: F401 (validate: imported from here too)
    compact,
    history_chars,
    validate,
    with_cache_breakpoints,
)
from agents.repeats import RepeatWatch
from agents.run_outcome import (
    BUDGET_ESCALATION_CODE,  # noqa: F401 (imported from here too)
    Kind,
    RunMetrics,
    RunOutcome,
)
from agents.tool_calls import SUBMIT_RESULT, ToolCalls, submit_tool  # noqa: F401
from agents.tools import Tool, ToolRecord
from codex.core.backoff import backoff_seconds
from codex.core.errors import Action, ClassifiedError, ClassifiedFailure
from integrations.anthropic.client import Response, Usage, is_context_overflow


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
    "You ended your turn without a tool call. If the work is not finished, "
    "continue with your tools; when it is done, call submit_result with the "
    "result object (nothing is recorded until you do)."
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
    "were removed (the notes in the first message say what they held). "
    "Continue from where you were."
)
RESUMED = (
    "[This run was interrupted (a worker stopped, or the model asked to wait) "
    "and resumes here, with the conversation as it was. {worktree}]"
)


@dataclass(frozen=True)
class Resume:
    """Where an interrupted run stood: its conversation (after a complete
    turn), its turns, usage and cost so far, and what the caller knows of
    the worktree since (said to the model)."""

    messages: list[dict[str, Any]]
    turns: int = 0
    usage: Usage = field(default_factory=Usage)
    cost_usd: Decimal = Decimal(0)
    worktree_note: str = ""


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
        review_submission: Callable[[dict[str, Any]], str] | None = None,
        checkpoint: Callable[..., None] | None = None,
        resume: Resume | None = None,
    ) -> None:
        self.client = client
        self.checkpoint = checkpoint
        self.overflow_retried = False
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
        self.budget = budget
        self.model = model
        self.clock = clock
        self.started = clock()
        self.metrics = RunMetrics()
        self.calls = ToolCalls(
            tools,
            result_schema,
            metrics=self.metrics,
            output_chars=budget.tool_output_chars,
            on_tool=on_tool,
            review_submission=review_submission,
            repeats=RepeatWatch(
                note_at=budget.repeat_note_at, limit=budget.repeat_limit
            ),
        )
        content = prompt if isinstance(prompt, str) else list(prompt)
        self.messages: list[dict[str, Any]] = [{"role": "user", "content": content}]
        if resume is not None:
            self._resume(resume)
        self.nudged = False
        self.second_chance_used = False
        self.wrapped_up = False

    def _resume(self, resume: Resume) -> None:
        """Go on from a checkpoint: its conversation (which ends with the
        user's turn of tool results) and what it had spent, with a note."""
        messages = [dict(message) for message in resume.messages]
        if not messages or messages[-1].get("role") != "user":
            return  # not a conversation this loop saved: start over
        self.messages = messages
        self.metrics.turns = resume.turns
        self.metrics.usage = self.metrics.usage + resume.usage
        self.metrics.cost_usd += resume.cost_usd
        note = RESUMED.format(worktree=resume.worktree_note).replace(" ]", "]")
        last = self.messages[-1]
        content = last["content"]
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        last["content"] = [*content, {"type": "text", "text": note}]

    def outcome(self, kind: str, reason: str = "", **extra: Any) -> RunOutcome:
        return RunOutcome(
            kind=kind,
            reason=reason,
            metrics=self.metrics,
            records=self.calls.records,
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
            self.system, self.calls.definitions, self.messages
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
                if is_context_overflow(failure.error):
                    # Too long for the model: shorten it and send it again,
                    # once; a second refusal in a row ends the run.
                    if not self.overflow_retried and self.compact_if_needed(force=True):
                        self.overflow_retried = True
                        continue
                    return self.outcome(
                        Kind.CONTEXT_OVERFLOW,
                        "the conversation exceeds the model's context window "
                        f"and cannot be compacted further: {failure.error.message}",
                    )
                wait = self.wait_before_retry(failure.error)
                if wait is None:
                    return self.outcome(
                        Kind.ERROR, failure.error.message, error=failure.error
                    )
                if self.checkpoint is not None:
                    # Kept with the task: a worker that dies while waiting
                    # leaves the wait for the next one to honour.
                    self.checkpoint(self.messages, self.metrics, wait)
                self.sleep(wait)
                continue  # the same conversation, sent again
            self.failures_in_a_row = 0
            self.overflow_retried = False
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
            invalid = getattr(response, "invalid_tool_inputs", None) or {}
            for block in uses:
                problem = invalid.get(block.get("id"), "")
                result, accepted = self.calls.call(block, problem)
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
            if self.calls.repeats.stuck_on:
                return self.outcome(Kind.STUCK, self.calls.repeats.stuck_on)
            if self.checkpoint is not None:
                self.checkpoint(self.messages, self.metrics)
            if self.calls.invalid >= self.budget.max_invalid_submissions:
                reason = (
                    f"{self.calls.invalid} invalid results submitted; the last errors: "
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
        self.calls.invalid = 0
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
    review_submission: Callable[[dict[str, Any]], str] | None = None,
    checkpoint: Callable[[list[dict[str, Any]], RunMetrics], None] | None = None,
    resume: Resume | None = None,
) -> RunOutcome:
    """Run one agent session to its submitted result or its stop reason.

    `system` is the role's system prompt (text or blocks, e.g. from
    agents.prompts.system_blocks); `prompt` the first user message; `tools`
    the role's tools (a Sandbox's `tools()` plus role tools); `on_tool` is
    called with each call's record (log it as a tool event); `sleep` waits
    before a transient model error is retried in place; `thinking` and
    `effort` are the role's thinking configuration (None: the model's
    default); `interjection` gives text to add to the next turn (people's
    messages sent while the run works), "" for none; `review_submission`
    looks at a valid result before it is accepted and gives the reason to
    send it back ("" accepts it); `checkpoint` is called with the
    conversation and metrics after every complete turn (and the seconds of a
    wait the model asked for, before it is waited out in place), and
    `resume` goes on from one (agents.checkpoints). Never raises for model
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
        review_submission=review_submission,
        checkpoint=checkpoint,
        resume=resume,
    )
    return run.run()
