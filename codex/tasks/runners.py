"""The phase-runner interface: what runs one phase of a task and what it returns.

A runner does the phase's work (later: a Claude agent in the task's worktree) and
describes the outcome as a PhaseResult; `codex.tasks.pipeline` turns that into
artifacts, reports, events and transitions. Runners never change the task.
CODEX_PHASE_RUNNER names the runner class.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Protocol

from django.conf import settings
from django.utils.module_loading import import_string

from codex.core.errors import ClassifiedError

if TYPE_CHECKING:
    from codex.tasks.models import Task


@dataclass
class PhaseResult:
    """What a phase produced. `outcome` is one of:

    - "done": the phase's work is recorded below; the guards decide what follows;
    - "blocked": a transient failure (`reason`, optional `retry_after`);
    - "escalate": a person must decide (`reason`, `questions`, `escalation_code`);
    - "failed": an unrecoverable error (`reason`);
    - "error": a classified error of an outside system (`error`), acted on by
      its action (wait_retry, rotate_token, pull_retry, manual_review, abort);
    - "await": a gate: a person approves or merges first, or a spend cap is
      raised (`reason`, `gate_kind`, `gate_mode`, `gate_subject`;
      docs/gates.md); the task escalates with the gate's own escalation.

    `metrics` (tool_count, files_changed, input_tokens, output_tokens,
    cache_write_tokens, cache_read_tokens, cost_usd, response_length) go to the
    step's agent run.
    """

    outcome: str = "done"
    reason: str = ""
    retry_after: timedelta | None = None
    questions: list[str] = field(default_factory=list)
    escalation_code: str = "manual_review"
    # intake / planning / release: documents by name (spec.md, plan.md, ...)
    artifacts: dict[str, str] = field(default_factory=dict)
    needs_clarification: bool = False
    # planning
    total_tasks: int | None = None
    # planning: the planner's split into child requests (title, description,
    # acceptance_criteria), when the request is too big for one pull request
    children: list[dict[str, str]] = field(default_factory=list)
    # implementation
    current_task: int | None = None
    commits: list[str] = field(default_factory=list)
    branch: str = ""
    pr_url: str = ""
    ci_passing: bool | None = None
    # verification and review: the report's fields
    # (docs/domain/tasks.md#verification-report and #review-report)
    verification: dict[str, Any] | None = None
    review: dict[str, Any] | None = None
    # release
    merged: bool = False
    # outside-system failures and the step's agent-run metrics
    error: ClassifiedError | None = None
    metrics: dict[str, Any] = field(default_factory=dict)
    # a gate
    gate_kind: str = ""
    gate_mode: str = "approval"
    gate_subject: str = ""

    @classmethod
    def awaiting(
        cls, reason: str, *, kind: str, subject: str = "", mode: str = "approval"
    ) -> PhaseResult:
        return cls(
            outcome="await",
            reason=reason,
            gate_kind=kind,
            gate_mode=mode,
            gate_subject=subject,
        )

    @classmethod
    def blocked(cls, reason: str, retry_after: timedelta | None = None) -> PhaseResult:
        return cls(outcome="blocked", reason=reason, retry_after=retry_after)

    @classmethod
    def failed(cls, reason: str) -> PhaseResult:
        return cls(outcome="failed", reason=reason)

    @classmethod
    def from_error(cls, error: ClassifiedError) -> PhaseResult:
        return cls(outcome="error", reason=error.message, error=error)

    @classmethod
    def escalate(
        cls,
        reason: str,
        questions: list[str] | None = None,
        code: str = "manual_review",
    ) -> PhaseResult:
        return cls(
            outcome="escalate",
            reason=reason,
            questions=list(questions or []),
            escalation_code=code,
        )


class PhaseRunner(Protocol):
    """Runs the current phase of a task and reports what happened."""

    def run(self, task: Task) -> PhaseResult: ...


NO_BACKEND_REASON = "no agent backend configured"


class UnconfiguredPhaseRunner:
    """The default until an agent backend is configured: every phase blocks with
    a reason an operator can see in the admin."""

    def run(self, task: Task) -> PhaseResult:
        return PhaseResult.blocked(NO_BACKEND_REASON)


def get_phase_runner() -> PhaseRunner:
    """The runner named by CODEX_PHASE_RUNNER."""
    return import_string(settings.CODEX_PHASE_RUNNER)()
