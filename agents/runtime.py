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

Prompt caching: the tools and the system prompt are the stable prefix and
carry a cache breakpoint; the conversation carries one on its last message
(and one on the previous request's last message, so the cache lookup always
finds what the previous turn wrote), so each turn re-sends the history as
cache reads and pays full price only for the new tail. Tool outputs are capped
and, when the history grows past a limit, old tool results are replaced by
short stubs; compaction changes the prefix, so it cuts well below the limit to
happen rarely.
"""

from __future__ import annotations

import copy
import json
import random
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any, Protocol

from django.conf import settings

from agents.tools import Tool, ToolOutcome, ToolRecord, cap_text
from codex.core.errors import Action, ClassifiedError, ClassifiedFailure
from integrations.anthropic.client import Response, Usage

SUBMIT_RESULT = "submit_result"
# The escalation reason of an exhausted budget. EscalationReason has no
# budget entry yet, so it is a manual review whose detail names the budget.
BUDGET_ESCALATION_CODE = "manual_review"
CACHE = {"type": "ephemeral"}
# The share of the worker's job timeout (Q_TIMEOUT) an agent run may take.
JOB_TIMEOUT_SHARE = 0.8
# Block types that may carry cache_control (thinking blocks may not).
_CACHEABLE = frozenset(
    {"text", "tool_use", "tool_result", "image", "document", "server_tool_use"}
)


class Kind:
    """Why a run ended (RunOutcome.kind)."""

    SUBMITTED = "submitted"
    BUDGET_EXHAUSTED = "budget_exhausted"  # escalate: a person raises the budget
    REFUSAL = "refusal"  # manual review
    INVALID_RESULT = "invalid_result"  # fail
    NO_RESULT = "no_result"  # fail
    CONTEXT_OVERFLOW = "context_overflow"  # fail
    ERROR = "error"  # the client's classified error decides


# -- budgets ----------------------------------------------------------------


@dataclass(frozen=True)
class Budget:
    """Limits of one run. Turns, tokens and cost are hard caps; time gets a
    wrap-up instruction at `wrap_up_at` (a fraction of each limit) and is a
    hard cap at its end. Tokens count every token of every call (cached reads
    included), the same total as AgentRun.total_tokens. Tokens and cost are
    also held to what the task has left (`task_*`, from TaskBudget.apply)."""

    max_turns: int = 60
    max_tokens: int = 5_000_000
    max_cost_usd: Decimal = Decimal("10")
    max_seconds: float = 1800
    wrap_up_at: float = 0.8
    max_invalid_submissions: int = 3
    max_response_tokens: int = 8192
    tool_output_chars: int = 20_000
    context_chars: int = 400_000  # about 100k tokens of history
    keep_recent_turns: int = 4
    # Transient model errors retried in place (module docstring).
    model_retries: int = 6
    model_retry_max_wait: float = 30.0
    model_retry_base_wait: float = 1.0

    @classmethod
    def from_settings(cls) -> Budget:
        def get(name: str, default: Any) -> Any:
            return getattr(settings, name, default)

        base = cls()
        max_seconds = float(get("CODEX_AGENT_MAX_SECONDS", base.max_seconds))
        job_timeout = get("Q_TIMEOUT", None)
        if job_timeout:
            # django-q kills a job at its timeout: a run allowed longer is cut
            # short there, its task waits for the stale-work reaper, and the
            # phase starts over only to be killed again, forever. Ending inside
            # the job (wrap-up first, then budget_exhausted: a person decides)
            # leaves the rest of the step (worktree, tests, merge) its share.
            max_seconds = min(max_seconds, float(job_timeout) * JOB_TIMEOUT_SHARE)
        return cls(
            max_turns=int(get("CODEX_AGENT_MAX_TURNS", base.max_turns)),
            max_tokens=int(get("CODEX_AGENT_MAX_TOKENS", base.max_tokens)),
            max_cost_usd=setting_amount("CODEX_AGENT_MAX_COST_USD", base.max_cost_usd),
            max_seconds=max_seconds,
            max_response_tokens=int(
                get("CODEX_AGENT_MAX_RESPONSE_TOKENS", base.max_response_tokens)
            ),
            tool_output_chars=int(
                get("CODEX_AGENT_TOOL_OUTPUT_CHARS", base.tool_output_chars)
            ),
            context_chars=int(get("CODEX_AGENT_CONTEXT_CHARS", base.context_chars)),
            model_retries=int(get("CODEX_MODEL_INLINE_RETRIES", base.model_retries)),
            model_retry_max_wait=float(
                get("CODEX_MODEL_INLINE_WAIT_SECONDS", base.model_retry_max_wait)
            ),
        )

    # The task's own budget (TaskBudget.apply): its caps and what the task's
    # earlier runs spent. None: no task cap.
    task_max_cost_usd: Decimal | None = None
    task_spent_cost_usd: Decimal = Decimal(0)
    task_max_tokens: int | None = None
    task_spent_tokens: int = 0

    def limited_to(
        self, *, cost_usd: Decimal | None = None, tokens: int | None = None
    ) -> Budget:
        """This budget, with the run's caps tightened to `cost_usd`/`tokens`."""
        return replace(
            self,
            max_cost_usd=self.max_cost_usd
            if cost_usd is None
            else max(Decimal(0), min(self.max_cost_usd, cost_usd)),
            max_tokens=self.max_tokens
            if tokens is None
            else max(0, min(self.max_tokens, tokens)),
        )

    @property
    def cost_cap(self) -> Decimal:
        """What this run may spend: its own cap, or less when the task has
        less left."""
        if self.task_max_cost_usd is None:
            return self.max_cost_usd
        left = max(Decimal(0), self.task_max_cost_usd - self.task_spent_cost_usd)
        return min(self.max_cost_usd, left)

    @property
    def token_cap(self) -> int:
        """The tokens this run may use (its cap, or what the task has left)."""
        if self.task_max_tokens is None:
            return self.max_tokens
        return min(
            self.max_tokens, max(0, self.task_max_tokens - self.task_spent_tokens)
        )

    def exhausted_by(self, *, cost_usd: Decimal, tokens: int) -> str:
        """The token or cost budget a run that used `tokens` and `cost_usd`
        has run out of (the task's when that is the tighter one), or ""."""
        if tokens >= self.token_cap:
            if self.token_cap < self.max_tokens:
                total = self.task_spent_tokens + tokens
                return (
                    f"task token budget exhausted ({total} of "
                    f"{self.task_max_tokens} tokens used by the task's runs; "
                    "raise CODEX_TASK_MAX_TOKENS to go on)"
                )
            return f"token budget exhausted ({tokens} of {self.max_tokens} tokens)"
        if cost_usd >= self.cost_cap:
            if self.cost_cap < self.max_cost_usd:
                total = self.task_spent_cost_usd + cost_usd
                return (
                    f"task cost budget exhausted (${usd(total)} of "
                    f"${usd(self.task_max_cost_usd)} spent by the task's runs; "
                    "raise CODEX_TASK_MAX_COST_USD to go on)"
                )
            return f"cost budget exhausted (${cost_usd} of ${self.max_cost_usd} spent)"
        return ""


def setting_amount(name: str, default: Decimal) -> Decimal:
    """A dollar amount from the settings: a Decimal (codex.env.env_amount checked
    it at start-up), or the string or number a test put there."""
    return Decimal(str(getattr(settings, name, default) or 0))


def usd(amount: Decimal | None) -> str:
    """An amount of dollars for a message: cents."""
    return f"{Decimal(amount or 0).quantize(Decimal('0.01'))}"


@dataclass(frozen=True)
class TaskBudget:
    """A task's budget across all its agent runs (CODEX_TASK_MAX_COST_USD,
    CODEX_TASK_MAX_TOKENS; 0 = no cap): the caps and the sums of the task's
    AgentRuns. A run starts with what is left (`apply`); a task with nothing
    left does not start one (`exhausted`)."""

    max_cost_usd: Decimal | None
    max_tokens: int | None
    spent_cost_usd: Decimal = Decimal(0)
    spent_tokens: int = 0
    runs: int = 0

    @classmethod
    def of(cls, task: Any) -> TaskBudget:
        """The caps from the settings and what `task`'s runs have spent."""
        from codex.fleet.models import AgentRun

        cost = setting_amount("CODEX_TASK_MAX_COST_USD", Decimal(0))
        tokens = int(getattr(settings, "CODEX_TASK_MAX_TOKENS", 0) or 0)
        spent = AgentRun.objects.filter(task=task).spend()
        return cls(
            max_cost_usd=cost if cost > 0 else None,
            max_tokens=tokens if tokens > 0 else None,
            spent_cost_usd=spent.cost_usd,
            spent_tokens=spent.tokens,
            runs=spent.runs,
        )

    def exhausted(self) -> str:
        """Why no further run may start, or ""."""
        if self.max_cost_usd is not None and self.spent_cost_usd >= self.max_cost_usd:
            return (
                f"task cost budget exhausted (${usd(self.spent_cost_usd)} of "
                f"${usd(self.max_cost_usd)} spent over {self.runs} runs; raise "
                "CODEX_TASK_MAX_COST_USD to go on)"
            )
        if self.max_tokens is not None and self.spent_tokens >= self.max_tokens:
            return (
                f"task token budget exhausted ({self.spent_tokens} of "
                f"{self.max_tokens} tokens used over {self.runs} runs; raise "
                "CODEX_TASK_MAX_TOKENS to go on)"
            )
        return ""

    def apply(self, budget: Budget) -> Budget:
        """`budget` for a run of this task: it ends where the task's runs
        together reach the task's caps."""
        return replace(
            budget,
            task_max_cost_usd=self.max_cost_usd,
            task_spent_cost_usd=self.spent_cost_usd,
            task_max_tokens=self.max_tokens,
            task_spent_tokens=self.spent_tokens,
        )


# -- results ----------------------------------------------------------------


@dataclass
class RunMetrics:
    """Spec 000's session counts and the run's usage; `as_dict()` gives the
    PhaseResult.metrics keys (AgentRun field names)."""

    tool_count: int = 0
    files_changed: set[str] = field(default_factory=set)
    usage: Usage = field(default_factory=Usage)
    cost_usd: Decimal = Decimal(0)
    turns: int = 0
    response_length: int = 0

    @property
    def tokens(self) -> int:
        return self.usage.total

    def as_dict(self) -> dict[str, Any]:
        return {
            "tool_count": self.tool_count,
            "files_changed": len(self.files_changed),
            **self.usage.as_dict(),
            "cost_usd": self.cost_usd,
            "turns": self.turns,
            "response_length": self.response_length,
        }


@dataclass
class RunOutcome:
    """The end of a run: the submitted result, or why there is none."""

    kind: str
    result: dict[str, Any] | None = None
    reason: str = ""
    error: ClassifiedError | None = None
    metrics: RunMetrics = field(default_factory=RunMetrics)
    records: list[ToolRecord] = field(default_factory=list)
    messages: list[dict[str, Any]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.kind == Kind.SUBMITTED

    def phase_result(self) -> Any:
        """A PhaseResult for a failed run (role modules fill in a successful
        one from `result`): budget exhaustion escalates with its reason, a
        refusal goes to manual review, a client error keeps its action, the
        rest fail."""
        from codex.tasks.runners import PhaseResult

        if self.kind == Kind.ERROR and self.error is not None:
            result = PhaseResult.from_error(self.error)
        elif self.kind == Kind.BUDGET_EXHAUSTED:
            result = PhaseResult.escalate(self.reason, code=BUDGET_ESCALATION_CODE)
        elif self.kind == Kind.REFUSAL:
            result = PhaseResult.escalate(self.reason, code="manual_review")
        elif self.kind == Kind.SUBMITTED:
            result = PhaseResult()
        else:
            result = PhaseResult.failed(self.reason)
        result.metrics = self.metrics.as_dict()
        return result


class ModelClient(Protocol):
    def send(
        self,
        *,
        messages: Sequence[Mapping[str, Any]],
        system: Any = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        model: str | None = None,
        max_tokens: int = ...,
    ) -> Response: ...


# -- result validation ------------------------------------------------------

_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "null": (type(None),),
}


def validate(value: Any, schema: Mapping[str, Any], path: str = "$") -> list[str]:
    """Errors of `value` against the subset of JSON Schema the roles use:
    type (or a list of types), required, properties, additionalProperties
    false, items, enum, minItems, minLength, minimum, maximum."""
    errors: list[str] = []
    wanted = schema.get("type")
    if wanted is not None:
        names = [wanted] if isinstance(wanted, str) else list(wanted)
        ok = any(
            isinstance(value, _TYPES[name])
            # bool is an int in Python, never in JSON
            and not (isinstance(value, bool) and name in ("integer", "number"))
            for name in names
        )
        if not ok:
            return [f"{path}: expected {' or '.join(names)}, got {_json_type(value)}"]
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{path}: must be one of {schema['enum']}")
    if isinstance(value, dict):
        properties = schema.get("properties", {})
        for key in schema.get("required", []):
            if key not in value:
                errors.append(f"{path}: missing required key {key!r}")
        for key, item in value.items():
            if key in properties:
                errors.extend(validate(item, properties[key], f"{path}.{key}"))
            elif schema.get("additionalProperties") is False:
                errors.append(f"{path}: unexpected key {key!r}")
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0):
            errors.append(f"{path}: needs at least {schema['minItems']} items")
        if "items" in schema:
            for index, item in enumerate(value):
                errors.extend(validate(item, schema["items"], f"{path}[{index}]"))
    if isinstance(value, str) and len(value) < schema.get("minLength", 0):
        errors.append(f"{path}: needs at least {schema['minLength']} characters")
    if isinstance(value, int | float) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            errors.append(f"{path}: must be at least {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            errors.append(f"{path}: must be at most {schema['maximum']}")
    return errors


def _json_type(value: Any) -> str:
    for name, types in _TYPES.items():
        if isinstance(value, types) and not (
            isinstance(value, bool) and name in ("integer", "number")
        ):
            return name
    return type(value).__name__


# -- messages, caching and compaction --------------------------------------


def with_cache_breakpoints(
    system: Sequence[Mapping[str, Any]],
    tools: Sequence[Mapping[str, Any]],
    messages: Sequence[Mapping[str, Any]],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """Copies of system, tools and messages with cache_control on the last
    system block, the last tool, the last message and the message the previous
    request ended with (at most four breakpoints, the API's limit). The
    stored conversation is never marked: the breakpoints move every turn."""
    system_out = [dict(block) for block in system]
    if system_out:
        system_out[-1]["cache_control"] = CACHE
    tools_out = [dict(tool) for tool in tools]
    if tools_out:
        tools_out[-1]["cache_control"] = CACHE
    messages_out = list(messages)
    marks = [len(messages_out) - 1]
    # The previous request ended with the user message two turns back (user,
    # assistant, user); marking it too makes its cache entry a sure hit.
    if len(messages_out) >= 3 and messages_out[-1]["role"] == "user":
        marks.append(len(messages_out) - 3)
    for index in marks:
        if index >= 0:
            messages_out[index] = _mark_last_block(messages_out[index])
    return system_out, tools_out, messages_out


def _mark_last_block(message: Mapping[str, Any]) -> dict[str, Any]:
    content = message["content"]
    if isinstance(content, str):
        blocks: list[dict[str, Any]] = [{"type": "text", "text": content}]
    else:
        blocks = [dict(block) for block in content]
    for block in reversed(blocks):
        if block.get("type") in _CACHEABLE and block.get("text", "x") != "":
            block["cache_control"] = CACHE
            break
    return {**message, "content": blocks}


def history_chars(messages: Sequence[Mapping[str, Any]]) -> int:
    return len(json.dumps(messages, default=str))


STUB = (
    "[earlier output removed to keep the context small; run the tool again if needed]"
)
INPUT_STUB_CHARS = 500


def compact(
    messages: list[dict[str, Any]], *, target_chars: int, keep_recent: int
) -> bool:
    """Shrink the history in place, oldest first, until it is under
    `target_chars`: old tool results become a stub, long inputs of old tool
    calls are shortened. The first message (the task) and the last
    `keep_recent` exchanges stay whole. True if anything changed."""
    changed = False
    protected = max(1, len(messages) - 2 * keep_recent)
    for message in messages[1:protected]:
        if history_chars(messages) <= target_chars:
            break
        content = message.get("content")
        if not isinstance(content, list):
            continue
        for block in content:
            if block.get("type") == "tool_result" and block.get("content") != STUB:
                block["content"] = STUB
                changed = True
            elif block.get("type") == "tool_use":
                for key, value in list(block.get("input", {}).items()):
                    if isinstance(value, str) and len(value) > INPUT_STUB_CHARS:
                        block["input"][key] = (
                            f"{value[:200]}... [{len(value)} characters, shortened]"
                        )
                        changed = True
    return changed


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
    ) -> None:
        self.client = client
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
            max_tokens=self.budget.max_response_tokens,
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
        backoff = min(
            budget.model_retry_max_wait,
            budget.model_retry_base_wait * 2 ** (self.failures_in_a_row - 1),
        )
        return random.uniform(backoff / 2, backoff)

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
            message = f"unknown tool {name!r}"
            outcome = ToolOutcome(
                f"Error: {message}", True, ToolRecord(name or "?", False, message)
            )
        self.metrics.tool_count += 1
        self.metrics.files_changed.update(outcome.record.files_changed)
        self.records.append(outcome.record)
        if self.on_tool is not None:
            self.on_tool(outcome.record)
        result = {
            "type": "tool_result",
            "tool_use_id": block["id"],
            "content": cap_text(outcome.content, self.budget.tool_output_chars),
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
                    return self.outcome(
                        Kind.NO_RESULT,
                        "the model ended its turn twice without submitting a result",
                    )
                self.nudged = True
                self.add_user([{"type": "text", "text": NUDGE}])
                continue
            results, submitted = [], None
            for block in uses:
                result, accepted = self.call_tool(block)
                results.append(result)
                if accepted is not None and submitted is None:
                    submitted = accepted
            self.add_user(results)
            if submitted is not None:
                return self.outcome(Kind.SUBMITTED, result=submitted)
            if self.invalid >= self.budget.max_invalid_submissions:
                return self.outcome(
                    Kind.INVALID_RESULT,
                    f"{self.invalid} invalid results submitted; the last errors: "
                    + results[-1]["content"][:500],
                )


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
) -> RunOutcome:
    """Run one agent session to its submitted result or its stop reason.

    `system` is the role's system prompt (text or blocks, e.g. from
    agents.prompts.system_blocks); `prompt` the first user message; `tools`
    the role's tools (a Sandbox's `tools()` plus role tools); `on_tool` is
    called with each call's record (log it as a tool event); `sleep` waits
    before a transient model error is retried in place. Never raises for model
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
    )
    return run.run()
