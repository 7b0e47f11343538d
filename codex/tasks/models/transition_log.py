"""Every transition of a task goes to the event log, and a task that came
from an issue gets its progress comment edited after it
(docs/domain/tasks.md#task-status, docs/gates.md)."""

from __future__ import annotations

import functools

from django.db import DEFAULT_DB_ALIAS

from codex.core.store import default_reason
from codex.core.workers import enqueue_not_before
from codex.events.models import EventKind
from codex.tasks.models.progress_edit import ProgressEdit
from codex.tasks.models.task import Task

PROGRESS_JOB = "codex.tasks.progress.update_progress_comment"


def record_transition_event(sender, instance, name, source, target, **kwargs) -> None:
    """django-fsm post_transition receiver: every transition goes to the event log."""
    if not isinstance(instance, Task):
        return
    method_kwargs = kwargs.get("method_kwargs") or {}
    field = "status" if name in status_transition_names() else "phase"
    data = {"transition": name}
    if "questions" in method_kwargs and method_kwargs["questions"]:
        data["questions"] = list(method_kwargs["questions"])
    if method_kwargs.get("feedback"):
        data["feedback"] = method_kwargs["feedback"]
    retry_after = method_kwargs.get("retry_after")
    if retry_after:
        data["retry_after_seconds"] = retry_after.total_seconds()
    if instance.issue_number and not instance.__dict__.get("_progress_queued"):
        # The issue's progress comment follows every change (docs/gates.md),
        # at most one queued edit per task, which carries every change made
        # while it waits (ProgressEdit).
        instance.__dict__["_progress_queued"] = True
        instance.on_save(lambda: queue_progress_edit(instance))
    instance.record(
        EventKind.TRANSITION,
        by=str(method_kwargs.get("by") or "unknown"),
        reason=str(method_kwargs.get("reason") or default_reason(instance, name)),
        field=field,
        source=source,
        target=target,
        data=data,
    )


def queue_progress_edit(task: Task) -> None:
    """In the transaction of a save of `task` that changed it: queue an edit
    of its progress comment, unless one is queued already (it carries this
    change), due CODEX_PROGRESS_MIN_SECONDS after the last edit."""
    task.__dict__.pop("_progress_queued", None)
    due = ProgressEdit.request(task.pk)
    if due is not None:
        enqueue_not_before(
            PROGRESS_JOB,
            task.task_id,
            not_before=due,
            using=task._state.db or DEFAULT_DB_ALIAS,
        )


@functools.cache
def status_transition_names() -> frozenset[str]:
    """Names of the transitions of the `status` field (the rest move `phase`)."""
    return frozenset(
        t.name for t in Task._meta.get_field("status").get_all_transitions(Task)
    )
