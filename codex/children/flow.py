"""Where parents and children meet the task pipeline (docs/children.md).

- `held_step(task)`: called by a worker's step (codex.tasks.jobs.advance_task)
  before it runs the task's phase. A parent does no phase work of its own
  once it fans out: its step starts the fan-out (the planner's split, or the
  children its request lists) and then waits. A child at release waits for
  the parent's analysis, which merges its pull request (or not); only then
  does its release step run and complete it.
- `on_task_transition`: a child that reaches release, or stops (failed,
  cancelled, escalated), reports to the parent (a job, after the commit).
- `on_fan_out_transition`: a completed analysis is carried out (a job).
"""

from __future__ import annotations

import logging

from django.db.models import Q

from codex.children.choices import FanOutState
from codex.children.hooks import PipelineTask
from codex.children.models import Child, FanOut
from codex.children.requests import (
    ChildListInvalid,
    ChildRequest,
    from_split,
    parse_children_list,
)
from codex.core.workers import enqueue_on_commit

logger = logging.getLogger(__name__)

REPORT_JOB = "codex.children.jobs.report_child"
CARRY_OUT_JOB = "codex.children.jobs.carry_out_analysis"
SPLIT_KEY = "split"
REPORTING_TARGETS = {"failed", "cancelled", "escalated"}


def requested_children(task: PipelineTask) -> list[ChildRequest]:
    """The children a task is to fan out to: the planner's split, else those
    its request lists (docs/children.md); [] for an ordinary task. A list
    that breaks the rules (more than five) is not a fan-out: the task runs
    as one."""
    split = (task.phase_progress.get("planning") or {}).get(SPLIT_KEY)
    try:
        if split:
            return from_split(split)
        return parse_children_list(task.description)
    except ChildListInvalid as exc:
        logger.info("%s lists children that cannot fan out: %s", task, exc)
        return []


# A fan-out in these states is waiting on its children or its analysis; the
# scheduled close_expired_windows moves it on (and carries out the analysis).
WAITING_STATES = (
    FanOutState.AWAITING_COMPLETIONS,
    FanOutState.ANALYZING,
    FanOutState.COMPLETE,
)


def waiting_on_fan_out() -> Q:
    """Tasks (a Task query) whose step is held by a fan-out, not lost: a
    parent whose children are spawned, and a child at release whose parent
    has not decided yet. Stuck-task recovery leaves them alone."""
    return Q(fan_out__state__in=WAITING_STATES) | Q(
        phase="release",
        as_child__fan_out__state__in=(
            FanOutState.AWAITING_COMPLETIONS,
            FanOutState.ANALYZING,
        ),
    )


def held_step(task: PipelineTask, *, by: str) -> str | None:
    """Why the worker's step must not run the task's phase now, after doing
    the parent's or child's part; None for an ordinary step."""
    fan_out = FanOut.objects.of_parent(task.pk)
    if fan_out is None:
        requests = requested_children(task)
        if requests:
            from codex.children.spawn import fan_out_task

            fan_out = fan_out_task(task, requests, by=by)
    if fan_out is not None:
        return (
            f"waiting for {fan_out.expected_child_count} children "
            f"(fan-out {fan_out.state})"
        )
    if task.phase != "release":
        return None  # a child waits for its parent at release only
    child = Child.objects.filter(task=task).select_related("fan_out").first()
    if child is None:
        return None
    parent_fan_out = child.fan_out
    if parent_fan_out.state != FanOutState.COMPLETE:
        return "waiting for the parent's completion analysis"
    from codex.children.reporting import pr_number

    analysis = getattr(parent_fan_out, "analysis", None)
    if analysis is None or pr_number(task.pr_url) not in analysis.prs_to_merge:
        return "not chosen for merging by the parent's analysis"
    return None


def on_task_transition(sender, instance, name, source, target, **kwargs) -> None:
    """django-fsm post_transition receiver (Task): a child that reached release
    or stopped reports to its parent, once its transition commits. A child
    waiting at a gate (escalated by await_approval: a plan approval, a spend
    cap) has not stopped: it goes on once a person decides."""
    if name == "await_approval":
        return
    if target not in REPORTING_TARGETS and not (
        target == "release" and name == "begin_release"
    ):
        return
    if instance.pk is None or not Child.objects.filter(task_id=instance.pk).exists():
        return
    instance.on_save(lambda: enqueue_on_commit(REPORT_JOB, instance.task_id))


def on_fan_out_transition(sender, instance, name, source, target, **kwargs) -> None:
    """django-fsm post_transition receiver (FanOut): carry out a completed
    analysis once it commits."""
    if target == FanOutState.COMPLETE:
        enqueue_on_commit(CARRY_OUT_JOB, instance.pk)
