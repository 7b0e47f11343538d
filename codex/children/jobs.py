"""Worker entry points for fan-outs. Jobs take ids and re-read their rows."""

from __future__ import annotations

import logging
from datetime import datetime

from django.utils import timezone

from codex.children.models import FanOut
from codex.core.store import LeaseUnavailable, VersionConflict

logger = logging.getLogger(__name__)


def close_expired_windows(now: datetime | None = None) -> int:
    """Scheduled: stop the children past their own timeout (time_out_children),
    time out every fan-out whose completion window closed, and
    finish by the rules every analysis past its 8 minutes
    (docs/domain/fan-out.md#fan-out-limits).
    Safe to run twice or concurrently: `close_window` re-checks under the row
    lock. Then carries out the analyses whose parent is still in progress
    (finish_decided_fan_outs). Returns how many fan-outs it moved on.
    """
    now = now or timezone.now()
    time_out_children(now)
    moved = 0
    for pk in FanOut.objects.due(now).values_list("pk", flat=True):
        fan_out = FanOut.objects.get(pk=pk)
        try:
            moved += fan_out.close_window(now, by="scheduler:close_expired_windows")
        except (LeaseUnavailable, VersionConflict) as exc:
            logger.info("close_expired_windows: %s busy (%s); next run", fan_out, exc)
    finish_decided_fan_outs()
    return moved


def time_out_children(now: datetime | None = None) -> list[str]:
    """Cancel every child that worked longer than children.child_timeout_minutes
    (read now) without reporting: its cancellation reports it to the parent
    ("🤖 Child C2 failed: cancelled: timed out ..."), which counts towards the
    analysis like any report (docs/children.md). Returns the children stopped
    (a child whose worker is in a step stops when the step ends)."""
    from django_fsm import TransitionNotAllowed

    from codex.children.models import Child
    from codex.children.models.child import child_timeout

    now = now or timezone.now()
    timeout = child_timeout()
    minutes = int(timeout.total_seconds() // 60)
    stopped = []
    for child in Child.objects.overdue(now, timeout).select_related("task")[:100]:
        try:
            child.task.request_control(
                "cancel",
                by="scheduler:child-timeout",
                reason=f"timed out: no report after {minutes} minute(s) "
                "(children.child_timeout_minutes)",
            )
        except TransitionNotAllowed as exc:
            logger.info("time_out_children: %s not cancelled: %s", child, exc)
            continue
        stopped.append(child.child_id)
    return stopped


def report_child(task_id: str) -> str:
    """A child task reached release or stopped: post its report on the
    parent's issue (once) and record it in the fan-out."""
    from codex.children.models import Child
    from codex.children.reporting import report

    child = (
        Child.objects.select_related("fan_out", "task", "task__repository")
        .filter(task__task_id=task_id)
        .first()
    )
    if child is None:
        return "not a child"
    found = report(child)
    return "nothing to report" if found is None else f"{found}"


def carry_out_analysis(fan_out_id: int) -> dict:
    """Do what a completed fan-out's analysis decided (merges, the comment,
    the children, the parent). Safe to run again."""
    from codex.children.execute import carry_out

    fan_out = FanOut.objects.select_related("parent", "parent__repository").filter(
        pk=fan_out_id
    )
    found = fan_out.first()
    return {} if found is None else carry_out(found)


def finish_decided_fan_outs() -> int:
    """The parents of completed fan-outs still in progress: their analysis
    is carried out again (a carry-out that found the parent busy, or a worker
    that died half-way). Returns how many were looked at."""
    from codex.children.choices import FanOutState

    pending = FanOut.objects.filter(
        state=FanOutState.COMPLETE, parent__status="in_progress"
    ).values_list("pk", flat=True)
    count = 0
    for pk in list(pending[:100]):
        try:
            carry_out_analysis(pk)
        except Exception:  # noqa: BLE001 - one fan-out must not stop the others
            logger.exception("finish_decided_fan_outs: fan-out %s", pk)
        count += 1
    return count
