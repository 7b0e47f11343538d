"""The limits an agent run is held to: one run's `Budget` (turns, tokens,
cost, time) and a task's `TaskBudget` over all of the task's runs.

They live apart from the loop (agents.runtime) because they are used before
any run starts: the phase runner reads what the task has spent, refuses a run
when nothing is left, and hands the loop a budget tightened to the rest.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Any

from django.conf import settings


@dataclass(frozen=True)
class RoleLimits:
    """A role's default limits for one run: turns, tokens (every token of
    every call, cached reads included), dollars and seconds."""

    max_turns: int
    max_tokens: int
    max_cost_usd: Decimal
    max_seconds: float


# Each role's run, by default: the developer works like a coding agent on a
# real repository (hundreds of steps: read, edit, run the tests, again); the
# planner and reviewer read widely; triage, QA's judging and release notes
# take a few steps. Tokens count cached reads, so a long run with a large
# context counts millions. Overridden per role by CODEX_AGENT_MAX_<LIMIT>_<ROLE>
# or for every role by CODEX_AGENT_MAX_<LIMIT> (README).
ROLE_BUDGETS: dict[str, RoleLimits] = {
    "product_manager": RoleLimits(40, 4_000_000, Decimal("3"), 900),
    "planner": RoleLimits(100, 10_000_000, Decimal("8"), 1800),
    "developer": RoleLimits(300, 40_000_000, Decimal("20"), 3600),
    "qa": RoleLimits(60, 6_000_000, Decimal("4"), 1200),
    "reviewer": RoleLimits(100, 10_000_000, Decimal("8"), 1800),
    "release": RoleLimits(10, 500_000, Decimal("0.50"), 300),
}
LIMITS = ("max_turns", "max_tokens", "max_cost_usd", "max_seconds")


def _limit(role: str | None, name: str) -> Any:
    """The setting of one limit: the role's own (CODEX_AGENT_MAX_TURNS_DEVELOPER),
    else every role's (CODEX_AGENT_MAX_TURNS) when not 0; None when neither."""
    setting = f"CODEX_AGENT_{name.upper()}"
    if role:
        own = getattr(settings, f"{setting}_{role.upper()}", None)
        if own not in (None, ""):
            return own
    shared = getattr(settings, setting, None)
    if shared in (None, "") or Decimal(str(shared)) == 0:
        return None
    return shared


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
    max_response_tokens: int = 0  # 0: the model's whole output budget
    tool_output_chars: int = 20_000
    context_chars: int = 400_000  # about 100k tokens of history
    keep_recent_turns: int = 4
    # The same call with the same result, nothing changed in between: a note
    # at the first count, the run ends at the second (agents.repeats).
    repeat_note_at: int = 4
    repeat_limit: int = 8
    # Transient model errors retried in place (module docstring).
    model_retries: int = 6
    model_retry_max_wait: float = 30.0
    model_retry_base_wait: float = 1.0

    @classmethod
    def from_settings(cls, role: str | None = None) -> Budget:
        """The budget of a run of `role` (its ROLE_BUDGETS defaults and the
        settings over them); no role: the class defaults and the settings.
        The run's time is its own budget: the step's heartbeat keeps the
        task's lease while it works, and CODEX_JOB_TIMEOUT (a safety net for
        a hung worker) is set well above it."""

        def get(name: str, default: Any) -> Any:
            return getattr(settings, name, default)

        base = cls()
        defaults = ROLE_BUDGETS.get(role or "")
        limits = {}
        for name in LIMITS:
            value = _limit(role, name)
            if value is None:
                value = getattr(defaults or base, name)
            limits[name] = value
        return cls(
            max_turns=int(limits["max_turns"]),
            max_tokens=int(limits["max_tokens"]),
            max_cost_usd=Decimal(str(limits["max_cost_usd"])),
            max_seconds=float(limits["max_seconds"]),
            max_response_tokens=int(
                get("CODEX_AGENT_MAX_RESPONSE_TOKENS", base.max_response_tokens)
            ),
            tool_output_chars=int(
                get("CODEX_AGENT_TOOL_OUTPUT_CHARS", base.tool_output_chars)
            ),
            context_chars=int(get("CODEX_AGENT_CONTEXT_CHARS", base.context_chars)),
            repeat_note_at=int(get("CODEX_AGENT_REPEAT_NOTE_AT", base.repeat_note_at)),
            repeat_limit=int(get("CODEX_AGENT_REPEAT_LIMIT", base.repeat_limit)),
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
        spent = AgentRun.spend_of_task(task.pk)
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
