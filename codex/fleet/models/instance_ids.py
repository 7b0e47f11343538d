"""Agent instance ids (docs/domain/fleet.md#instance-ids): made from the
instance's type, issue and agent number, and read back."""

from __future__ import annotations

import re

from codex.fleet.models.choices import InstanceType

# "work-123-a1", "review-123-a1", "planning-a1" (docs/domain/fleet.md#instance-ids); a
# task with no GitHub issue (the web form, the API) has "work-a1", "review-a1".
INSTANCE_ID_PATTERN = (
    r"^(?:(?:work|review)-(?:[1-9][0-9]*-)?a[1-9][0-9]*|planning-a[1-9][0-9]*)$"
)
_ISSUE_ID = re.compile(r"^(work|review)-(?:([1-9][0-9]*)-)?a([1-9][0-9]*)$")
_PLANNING_ID = re.compile(r"^planning-a([1-9][0-9]*)$")
ID_PREFIX = {
    InstanceType.CODING: "work",
    InstanceType.REVIEW: "review",
    InstanceType.PLANNING: "planning",
}


def new_instance_id(type: str, issue_number: int | None, agent_number: int) -> str:
    """The instance id (docs/domain/fleet.md#instance-ids): work-<issue>-a<n>,
    review-<issue>-a<n>,
    planning-a<n>. Work without a GitHub issue (a task from the web form or the
    API) is work-a<n> / review-a<n>, numbered per repository like planning-a<n>.
    Raises ValueError when the parts cannot form one."""
    if agent_number < 1:
        raise ValueError("agent_number starts at 1")
    if type == InstanceType.PLANNING:
        return f"planning-a{agent_number}"
    if type not in (InstanceType.CODING, InstanceType.REVIEW):
        raise ValueError(f"unknown instance type {type!r}")
    if issue_number is None:
        return f"{ID_PREFIX[type]}-a{agent_number}"
    if issue_number < 1:
        raise ValueError(f"issue_number must be positive, not {issue_number}")
    return f"{ID_PREFIX[type]}-{issue_number}-a{agent_number}"


def parse_instance_id(instance_id: str) -> tuple[str, int | None, int]:
    """(type, issue_number, agent_number) of an instance id; ValueError if none."""
    if match := _ISSUE_ID.match(instance_id):
        prefix, issue, agent = match.groups()
        type_ = InstanceType.CODING if prefix == "work" else InstanceType.REVIEW
        return type_, int(issue) if issue else None, int(agent)
    if match := _PLANNING_ID.match(instance_id):
        return InstanceType.PLANNING, None, int(match.group(1))
    raise ValueError(f"{instance_id!r} is not an instance id")
