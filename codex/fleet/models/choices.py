"""The enumerations of the fleet: instances, relationships, runs
(docs/domain/fleet.md)."""

from django.db import models


class InstanceType(models.TextChoices):
    CODING = "coding", "Coding"
    REVIEW = "review", "Review"
    PLANNING = "planning", "Planning"


class InstanceStatus(models.TextChoices):
    STARTED = "started", "Started"
    WAITING_REVIEW = "waiting_review", "Waiting for review"
    PR_CREATED = "pr_created", "Pull request created"
    PR_MERGED = "pr_merged", "Pull request merged"
    PR_CLOSED = "pr_closed", "Pull request closed"
    TERMINATED = "terminated", "Terminated"


class RelationshipType(models.TextChoices):
    SPAWNED_REVIEW = "spawned_review", "Spawned review"
    CREATED_FORK = "created_fork", "Created fork"
    PLANNING_TO_ISSUE = "planning_to_issue", "Planning to issue"


class ReviewLoopStatus(models.TextChoices):
    NORMAL = "NORMAL", "Normal"
    APPROACHING_LIMIT = "APPROACHING_LIMIT", "Approaching limit"
    AT_LIMIT = "AT_LIMIT", "At limit"


class RunStatus(models.TextChoices):
    RUNNING = "running", "Running"
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed"


class HealthStatus(models.TextChoices):
    HEALTHY = "healthy", "Healthy"
    WARNING = "warning", "Warning"
    UNHEALTHY = "unhealthy", "Unhealthy"
