"""The team's roles by their two names: the issue pipeline's role values the
records keep (triage, analyst, writer, build, reviewer, committer) and the
names the prompts use (product_manager, planner, developer, qa, reviewer,
release), with the phase each works in (docs/domain/tasks.md#issue-pipeline)."""

from __future__ import annotations

from codex.tasks.models import Role

# The phases and the issue-pipeline agents that work in them.
PHASE_ROLES = {
    "intake": Role.TRIAGE,
    "planning": Role.ANALYST,
    "implementation": Role.WRITER,
    "verification": Role.BUILD,
    "review": Role.REVIEWER,
    "release": Role.COMMITTER,
}
ROLE_PHASES = {role: phase for phase, role in PHASE_ROLES.items()}
# The names the prompts use for the roles (and human), one set for every
# tool: the records keep the issue pipeline's role values (PHASE_ROLES).
TEAM_NAMES = {
    Role.TRIAGE: "product_manager",
    Role.ANALYST: "planner",
    Role.WRITER: "developer",
    Role.BUILD: "qa",
    Role.REVIEWER: "reviewer",
    Role.COMMITTER: "release",
    Role.HUMAN: "human",
}
BY_TEAM_NAME = {name: role for role, name in TEAM_NAMES.items()}


def team_name(role: str) -> str:
    """The prompts' name of a spec role (writer → developer)."""
    return TEAM_NAMES.get(role, role)


def role_of(phase: str) -> str:
    """The issue-pipeline role working in `phase`."""
    try:
        return PHASE_ROLES[phase]
    except KeyError:
        raise ValueError(f"no agent role for phase {phase!r}") from None
