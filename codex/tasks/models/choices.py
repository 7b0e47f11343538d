"""The enumerations of spec 002 §2.2."""

from django.db import models


class Status(models.TextChoices):
    PENDING = "pending", "Pending"
    IN_PROGRESS = "in_progress", "In progress"
    BLOCKED = "blocked", "Blocked"
    ESCALATED = "escalated", "Escalated"
    PAUSED = "paused", "Paused"
    # A gate: a person approves the plan or the merge (codex.tasks.models.gates).
    AWAITING_APPROVAL = "awaiting_approval", "Awaiting approval"
    COMPLETED = "completed", "Completed"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"


TERMINAL_STATUSES = (Status.COMPLETED, Status.FAILED, Status.CANCELLED)


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
    FORM = "form", "Web form"
    API = "api", "API"
    MANUAL = "manual", "Operator"
    GITHUB = "github", "GitHub issue"


class Agent(models.TextChoices):
    """Spec 002's current_agent (pm, dev, qa, reviewer, none), plus the planner
    and release manager roles that DESIGN.md gives the planning and release phases."""

    PM = "pm", "Product manager"
    PLANNER = "planner", "Planner"
    DEV = "dev", "Developer"
    QA = "qa", "QA"
    REVIEWER = "reviewer", "Reviewer"
    RELEASE = "release", "Release manager"
    NONE = "none", "None"
