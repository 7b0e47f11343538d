"""Agent instances, their relationships, and agent runs (docs/domain/fleet.md)."""

from codex.fleet.models.choices import (
    HealthStatus,
    InstanceStatus,
    InstanceType,
    RelationshipType,
    ReviewLoopStatus,
    RunStatus,
)
from codex.fleet.models.instance import (
    INSTANCE_ID_PATTERN,
    AgentInstance,
    new_instance_id,
    parse_instance_id,
)
from codex.fleet.models.relationship import InstanceRelationship
from codex.fleet.models.run import AgentRun, new_session_id

__all__ = [
    "INSTANCE_ID_PATTERN",
    "AgentInstance",
    "AgentRun",
    "HealthStatus",
    "InstanceRelationship",
    "InstanceStatus",
    "InstanceType",
    "RelationshipType",
    "ReviewLoopStatus",
    "RunStatus",
    "new_instance_id",
    "new_session_id",
    "parse_instance_id",
]
