"""The task envelope and what hangs off it."""

from codex.tasks.models.analysis import (
    AgentQuestion,
    AlreadyAnswered,
    Analysis,
    BuildResult,
    Complexity,
    Learning,
    Role,
    Scope,
    Triage,
    TriageType,
)
from codex.tasks.models.artifact import Artifact
from codex.tasks.models.choices import (
    TERMINAL_STATUSES,
    Agent,
    CreatedBy,
    Phase,
    PhaseStatus,
    Priority,
    Status,
)
from codex.tasks.models.control import ControlAction, ControlRequest
from codex.tasks.models.escalation import (
    AlreadyResolved,
    Decision,
    Escalation,
    EscalationReason,
)
from codex.tasks.models.gates import (
    Decider,
    Gate,
    GateDecision,
    GateKind,
    GateMode,
    GateRefused,
)
from codex.tasks.models.progress_edit import ProgressEdit
from codex.tasks.models.queryset import new_task_id
from codex.tasks.models.reports import Recommendation, ReviewReport, VerificationReport
from codex.tasks.models.steering import SteeringMessage, SteeringSource
from codex.tasks.models.task import IdempotencyMismatch, ImmutableFieldError, Task

__all__ = [
    "AgentQuestion",
    "AlreadyAnswered",
    "Analysis",
    "BuildResult",
    "Complexity",
    "Learning",
    "Role",
    "Scope",
    "Triage",
    "TriageType",
    "TERMINAL_STATUSES",
    "Agent",
    "AlreadyResolved",
    "Artifact",
    "ControlAction",
    "ControlRequest",
    "CreatedBy",
    "Decision",
    "Decider",
    "Gate",
    "GateDecision",
    "GateKind",
    "GateMode",
    "GateRefused",
    "SteeringMessage",
    "SteeringSource",
    "Escalation",
    "EscalationReason",
    "IdempotencyMismatch",
    "ImmutableFieldError",
    "Phase",
    "PhaseStatus",
    "Priority",
    "ProgressEdit",
    "Recommendation",
    "ReviewReport",
    "Status",
    "Task",
    "VerificationReport",
    "new_task_id",
]
