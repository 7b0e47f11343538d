"""The enumerations of the task envelope (docs/domain/tasks.md#task-envelope)."""

from django.db import models


class Status(models.TextChoices):
    """The eight statuses of a task (docs/domain/tasks.md#task-status). A task
    waiting at a gate is `escalated`, with the gate's own escalation."""

    PENDING = "pending", "Pending"
    IN_PROGRESS = "in_progress", "In progress"
    BLOCKED = "blocked", "Blocked"
    ESCALATED = "escalated", "Escalated"
    PAUSED = "paused", "Paused"
    COMPLETED = "completed", "Completed"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"


TERMINAL_STATUSES = (Status.COMPLETED, Status.FAILED, Status.CANCELLED)
# The statuses in which the system owes the task work: stuck-task recovery
# looks at these (codex.tasks.recovery), and only these are indexed for it.
RECOVERABLE_STATUSES = (Status.PENDING, Status.IN_PROGRESS, Status.BLOCKED)


class Phase(models.TextChoices):
    INTAKE = "intake", "Intake"
    PLANNING = "planning", "Planning"
    IMPLEMENTATION = "implementation", "Implementation"
    VERIFICATION = "verification", "Verification"
    REVIEW = "review", "Review"
    RELEASE = "release", "Release"


class PhaseStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    IN_PROGRESS = "in_progress", "In progress"
    COMPLETED = "completed", "Completed"


class Priority(models.TextChoices):
    LOW = "low", "Low"
    MEDIUM = "medium", "Medium"
    HIGH = "high", "High"
    CRITICAL = "critical", "Critical"


class CreatedBy(models.TextChoices):
    """The envelope's `created_by`, exactly "form | api | manual"
    (docs/domain/tasks.md#created-by): a task from a GitHub issue came through
    GitHub's webhook or the backlog run, the API, and keeps its issue number."""

    FORM = "form", "Web form"
    API = "api", "API"
    MANUAL = "manual", "Operator"


class Agent(models.TextChoices):
    """The envelope's `current_agent`, exactly "pm | dev | qa | reviewer | none"
    (docs/domain/tasks.md#roles). Planning and release run as the developer:
    the plan is the developer's, and the release finishes the developer's pull
    request through its coding instance; the role that runs (planner, release
    manager) is the agent instance's `role`."""

    PM = "pm", "Product manager"
    DEV = "dev", "Developer"
    QA = "qa", "QA"
    REVIEWER = "reviewer", "Reviewer"
    NONE = "none", "None"
