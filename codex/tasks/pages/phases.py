"""The task page's phase table: the six phases in order with their status,
start, end and time, and how long a held task has waited."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.utils import timezone

from codex.tasks.models import Phase, Status, Task


def _parse_time(value: Any) -> datetime | None:
    try:
        return datetime.fromisoformat(value) if value else None
    except (TypeError, ValueError):
        return None


def format_duration(delta: timedelta | None) -> str:
    """3h 02m, 4m 05s, 12s: a phase's time at a glance."""
    if delta is None:
        return ""
    seconds = max(int(delta.total_seconds()), 0)
    hours, rest = divmod(seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    if hours:
        return f"{hours}h {minutes:02d}m"
    if minutes:
        return f"{minutes}m {seconds:02d}s"
    return f"{seconds}s"


# A task held in one of these stays in its phase without work going on: the
# phase says so and its clock stops when the hold began.
HELD_STATUSES = (Status.BLOCKED, Status.ESCALATED, Status.PAUSED)
PHASE_STATUS_LABELS = {
    "pending": "Pending",
    "in_progress": "In progress",
    "completed": "Completed",
    "stopped": "Stopped",
    **{status.value: status.label for status in HELD_STATUSES},
}


def held_since(task: Task) -> datetime | None:
    """When a blocked, escalated or paused task entered that state (its last
    status change in the event log); None for any other task."""
    if task.status not in HELD_STATUSES:
        return None
    change = (
        task.events.filter(field="status", target=task.status)
        .order_by("-created_at", "-id")
        .values_list("created_at", flat=True)
        .first()
    )
    return change or task.updated_at


def phase_rows(
    task: Task, now: datetime | None = None, held_at: datetime | None = None
) -> list[dict[str, Any]]:
    """The six phases in order with status, start, end and duration (a phase in
    progress counts up to now; one held blocked, escalated or paused shows that
    status and counts up to `held_at`)."""
    now = now or timezone.now()
    rows = []
    for phase, label in Phase.choices:
        progress = task.phase_progress.get(phase) or {}
        started = _parse_time(progress.get("started_at"))
        ended = _parse_time(progress.get("completed_at"))
        status = progress.get("status", "pending")
        if status == "in_progress" and task.is_terminal:
            # The task ended in this phase (cancelled, failed): it stopped then.
            status = "stopped"
            ended = ended or task.finished_at
        if status == "in_progress" and task.status in HELD_STATUSES:
            status = task.status
        if status in HELD_STATUSES:
            until = ended or held_at or now
        else:
            until = ended or (now if status == "in_progress" else None)
        rows.append(
            {
                "phase": phase,
                "label": label,
                "status": status,
                "status_label": PHASE_STATUS_LABELS.get(status, status.capitalize()),
                "held_since": held_at if status in HELD_STATUSES else None,
                "current": phase == task.phase and not task.is_terminal,
                "started_at": started,
                "completed_at": ended,
                "duration": format_duration(
                    until - started if started and until else None
                ),
                "invocations": progress.get("agent_invocations", 0),
            }
        )
    return rows
