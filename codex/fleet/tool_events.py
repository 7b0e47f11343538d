"""Tool events (docs/domain/fleet.md#tool-events), kept in the one event log.

Every tool call an agent instance makes becomes an Event of kind "tool" with
subject "instance:<id>"; `data` holds the tool, its arguments, its result and
the commit, under those names.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.db import models
from django.utils import timezone

from codex.events.models import Event, EventKind
from codex.fleet.models import AgentInstance, InstanceStatus

# Only these tools change an instance's status, so only they notify the UI.
STATUS_UPDATING_TOOLS = frozenset({"request_review", "create_pr", "send_feedback"})
# The tool-activity views look back one day (status updates) and one week.
RECENT_STATUS_UPDATES = timedelta(days=1)
AUDIT_TRAIL_WINDOW = timedelta(weeks=1)


def record_tool_event(
    instance: AgentInstance,
    tool_name: str,
    success: bool,
    error: str = "",
    metadata: dict[str, Any] | None = None,
    git_commit: str = "",
    status_change: str = "",
    status_updating: bool = False,
) -> Event:
    """Append one tool call of `instance` to the event log and stamp its
    last activity. `status_change` must be an instance status (or empty)."""
    if not tool_name:
        raise ValueError("tool_name is required")
    if status_change and status_change not in InstanceStatus.values:
        raise ValueError(f"{status_change!r} is not an instance status")
    if metadata is not None and not isinstance(metadata, dict):
        raise ValueError("metadata must be a JSON object (dict)")
    event = Event.log(
        EventKind.TOOL,
        actor=f"agent:{instance.instance_id}",
        reason=error or f"{tool_name} {'succeeded' if success else 'failed'}",
        task=instance.task,
        subject=instance.event_subject,
        data={
            "instance": instance.pk,
            "repository": instance.repository_id,
            "instance_type": instance.type,
            "tool_name": tool_name,
            "success": bool(success),
            "error_message": error,
            "metadata": metadata or {},
            "git_commit_hash": git_commit,
            "status_change": status_change,
            "is_status_updating": bool(status_updating),
        },
    )
    # Activity is not state: no version bump (see AgentInstance.beat).
    instance.write_unversioned(last_activity=event.created_at)
    return event


def tool_events_for(instance: AgentInstance) -> models.QuerySet[Event]:
    """The tool calls of `instance`, oldest first (its audit trail). Ids repeat
    across repositories, so the row is matched too."""
    return Event.objects.filter(
        kind=EventKind.TOOL, subject=instance.event_subject, data__instance=instance.pk
    ).in_order()


def recent_tool_events(
    *, within: timedelta = AUDIT_TRAIL_WINDOW, status_updating_only: bool = False
) -> models.QuerySet[Event]:
    """Tool activity: tool calls of the last week (or `within`), newest first;
    with `status_updating_only`, the ones that update the UI (look back one day
    for those: pass within=RECENT_STATUS_UPDATES)."""
    events = Event.objects.filter(
        kind=EventKind.TOOL, created_at__gt=timezone.now() - within
    )
    if status_updating_only:
        events = events.filter(data__is_status_updating=True)
    return events.order_by("-created_at", "-id")
