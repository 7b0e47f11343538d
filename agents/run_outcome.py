"""How a run of `run_agent` ended: why (Kind), its counts and usage
(RunMetrics), and the outcome the phase runner turns into a PhaseResult."""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from agents.tools import ToolRecord
from codex.core.errors import ClassifiedError
from integrations.anthropic.client import Usage

# The escalation reason of an exhausted budget. EscalationReason has no
# budget entry yet, so it is a manual review whose detail names the budget.
BUDGET_ESCALATION_CODE = "manual_review"


class Kind:
    """Why a run ended (RunOutcome.kind)."""

    SUBMITTED = "submitted"
    BUDGET_EXHAUSTED = "budget_exhausted"  # escalate: a person raises the budget
    REFUSAL = "refusal"  # manual review
    # After one more chance with the reason: a person looks (never a failure).
    INVALID_RESULT = "invalid_result"
    NO_RESULT = "no_result"
    CONTEXT_OVERFLOW = "context_overflow"
    STUCK = "stuck"  # the same call and result again and again: a person looks
    ERROR = "error"  # the client's classified error decides


# -- results ----------------------------------------------------------------


@dataclass
class RunMetrics:
    """The session counts (docs/domain/fleet.md#agent-run) and the run's
    usage; `as_dict()` gives the
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
        one from `result`): budget exhaustion escalates with its reason; a
        refusal, a run without a (valid) result and an overflowing context go
        to manual review (the model already had a second chance: a person
        decides whether to retry, never a terminal failure); a client error
        keeps its action."""
        from codex.tasks.runners import PhaseResult

        if self.kind == Kind.ERROR and self.error is not None:
            result = PhaseResult.from_error(self.error)
        elif self.kind == Kind.BUDGET_EXHAUSTED:
            result = PhaseResult.escalate(self.reason, code=BUDGET_ESCALATION_CODE)
        elif self.kind == Kind.SUBMITTED:
            result = PhaseResult()
        else:
            result = PhaseResult.escalate(self.reason, code="manual_review")
        result.metrics = self.metrics.as_dict()
        return result
