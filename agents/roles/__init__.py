"""One module per role of the task's phases (docs/domain/tasks.md#task-phase):
its system prompt, the JSON schema of its submit_result, and the function
turning a submitted result into the PhaseResult the pipeline applies. `ROLES`
maps a task phase to its role."""

from __future__ import annotations

from agents.roles import developer, planner, product_manager, qa, release, reviewer
from agents.roles.base import Role, RoleContext

ROLES: dict[str, Role] = {
    role.phase: role
    for role in (
        product_manager.ROLE,
        planner.ROLE,
        developer.ROLE,
        qa.ROLE,
        reviewer.ROLE,
        release.ROLE,
    )
}


def role_for(phase: str) -> Role:
    """The role that works in `phase`."""
    try:
        return ROLES[phase]
    except KeyError:
        raise ValueError(f"no agent role for phase {phase!r}") from None


__all__ = ["ROLES", "Role", "RoleContext", "role_for"]
