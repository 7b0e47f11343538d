"""Guards of the agent-instance and agent-run transitions, as named predicates."""

from __future__ import annotations

from typing import TYPE_CHECKING

from codex.fleet.limits import review_limits
from codex.fleet.models.choices import InstanceType

if TYPE_CHECKING:
    from codex.fleet.models.instance import AgentInstance


def is_coding_agent(instance: AgentInstance) -> bool:
    """WAITING_REVIEW means a *coding* agent called `request_review`
    (docs/domain/fleet.md#instance-status)."""
    return instance.type == InstanceType.CODING


def review_iterations_remain(instance: AgentInstance) -> bool:
    """Another review is allowed: fewer than `review.max_iterations` so far."""
    return instance.current_review_iteration() < review_limits().max_iterations
