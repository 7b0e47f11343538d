"""Agent instances, their relationships, agent runs and their checkpoints
(docs/domain/fleet.md)."""

from codex.fleet.models.checkpoint import RunCheckpoint
from codex.fleet.models.choices import (
    HealthStatus,
    InstanceStatus,
    InstanceType,
    RelationshipType,
    ReviewLoopStatus,
    RunStatus,
)
from codex.fleet.models.instance import AgentInstance
from codex.fleet.models.instance_ids import (
    INSTANCE_ID_PATTERN,
    new_instance_id,
    parse_instance_id,
)
from codex.fleet.models.instance_queryset import (
    MAX_PARALLEL_CODING,
    ParallelLimitReached,
)
from codex.fleet.models.live_output import LiveOutput
from codex.fleet.models.relationship import InstanceRelationship
from codex.fleet.models.run import AgentRun, new_session_id, running_step, step_run

__all__ = [
    "INSTANCE_ID_PATTERN",
    "AgentInstance",
    "AgentRun",
    "HealthStatus",
    "InstanceRelationship",
    "InstanceStatus",
    "InstanceType",
    "LiveOutput",
    "MAX_PARALLEL_CODING",
    "ParallelLimitReached",
    "RelationshipType",
    "ReviewLoopStatus",
    "RunCheckpoint",
    "RunStatus",
    "new_instance_id",
    "new_session_id",
    "running_step",
    "step_run",
    "parse_instance_id",
]
