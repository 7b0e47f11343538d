"""What a task's changes announce (docs/domain/notifications.md): its
escalation, its release (completed) and its failure, queued through the
notifications app's channels (codex.notifications.announcements.announce) with
the transition's own save.
"""

from __future__ import annotations

import logging
from typing import Any

from django.urls import NoReverseMatch, reverse

from codex.notifications.announcements import announce
from codex.notifications.models import Notification
from codex.tasks.models import Task

logger = logging.getLogger(__name__)


def task_link(task: Task) -> str:
    """The task page's path (Codex knows no public host name of its own)."""
    try:
        return reverse("pages:task", args=[task.task_id])
    except NoReverseMatch:
        return f"/tasks/{task.task_id}/"


def _describe(task: Task) -> str:
    where = task.repository.full_name if task.repository_id else ""
    issue = f", issue #{task.issue_number}" if task.issue_number else ""
    return f"{task.task_id} ({task.title}) in {where}{issue}"


def announce_escalation(task: Task) -> list[Notification]:
    """An escalation is announced (docs/domain/notifications.md)."""
    escalation = task.escalations.open().order_by("-created_at", "-id").first()
    if escalation is None:
        return []
    questions = "".join(f"\n- {q}" for q in escalation.questions)
    body = (
        f"{_describe(task)} needs a person in the {escalation.phase} phase: "
        f"{escalation.get_reason_display()}.\n{escalation.detail}"
        f"{chr(10) + 'Questions:' + questions if questions else ''}\n"
        f"Answer it at {task_link(task)}"
    )
    return announce(
        f"escalated:{task.task_id}:{escalation.pk}",
        subject=f"{task.task_id} needs a decision: {escalation.get_reason_display()}",
        body=body,
        task=task,
    )


def announce_release(task: Task) -> list[Notification]:
    """A completed task is announced (docs/domain/notifications.md)."""
    pull = f"\nPull request: {task.pr_url}" if task.pr_url else ""
    return announce(
        f"released:{task.task_id}",
        subject=f"{task.task_id} released: {task.title}",
        body=f"{_describe(task)} is complete.{pull}\n{task_link(task)}",
        task=task,
    )


def announce_failure(task: Task, reason: str) -> list[Notification]:
    """A task that failed (terminal): what went wrong and where to look."""
    return announce(
        f"failed:{task.task_id}",
        subject=f"{task.task_id} failed in {task.phase}",
        body=f"{_describe(task)} failed in the {task.phase} phase: {reason}\n"
        f"{task_link(task)}",
        task=task,
    )


# The task statuses announced when a transition reaches them.
ANNOUNCED_TARGETS = {"escalated", "completed", "failed"}


def announce_task_transition(
    sender: Any, instance: Any, name: str, source: str, target: str, **kwargs: Any
) -> None:
    """django-fsm post_transition receiver: a task that becomes escalated,
    completed (by any transition: a release, a noticed merge, its children's
    merges) or failed queues its announcement with the transition's own save
    (after the escalation row it makes, so the announcement can name it)."""
    if not isinstance(instance, Task) or target not in ANNOUNCED_TARGETS:
        return
    if source == target:
        return
    if target == "escalated":
        instance.on_save(_safely(announce_escalation, instance))
    elif target == "failed":
        reason = str((kwargs.get("method_kwargs") or {}).get("reason") or "failed")
        instance.on_save(_safely(announce_failure, instance, reason))
    else:
        instance.on_save(_safely(announce_release, instance))


def _safely(announcement: Any, *args: Any) -> Any:
    """The announcement as a callback that a broken notification setting (a
    value that does not parse) cannot turn into a failed transition: the
    task's change stands and the error is logged for an operator."""
    from django.core.exceptions import ImproperlyConfigured

    def callback() -> None:
        try:
            announcement(*args)
        except ImproperlyConfigured:
            logger.exception("%s: not announced", announcement.__name__)

    return callback
