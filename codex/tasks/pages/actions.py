"""The task page's buttons: retry, pause, resume and cancel, for the people whose
role allows them, through the same model calls as the API's task actions.

Who may press which button is the API's rule (codex.accounts.permissions): a
button the person's role does not allow is neither shown nor accepted (403).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.views.decorators.http import require_POST
from django_fsm import TransitionNotAllowed

from codex.accounts.decorators import roles_required
from codex.accounts.permissions import (
    EscalationPermission,
    TaskControlPermission,
    roles_of,
)
from codex.core.store import LeaseUnavailable, VersionConflict
from codex.tasks.api.actions import retry_task
from codex.tasks.api.serializers import available_actions
from codex.tasks.models import Status, Task

# The event log's reason when the person gave none.
PAGE_REASON = "on the task page"
BUTTON_ORDER = ("retry", "resume", "pause", "cancel")


@dataclass(frozen=True)
class PageAction:
    """One button: what it is called and what it asks before acting."""

    name: str
    label: str
    confirm: str
    danger: bool = False


def _describe(task: Task, name: str) -> PageAction:
    if name == "retry" and task.status == Status.FAILED:
        return PageAction(
            name,
            "Retry as a new task",
            f"Start a new task with the request of {task.task_id}?",
        )
    return {
        "retry": PageAction(
            name, "Retry now", f"Retry {task.task_id} now, without waiting?"
        ),
        "pause": PageAction(
            name, "Pause", f"Pause {task.task_id}? A step under way finishes first."
        ),
        "resume": PageAction(name, "Resume", f"Resume {task.task_id}?"),
        "cancel": PageAction(
            name,
            "Cancel task",
            f"Cancel {task.task_id}? A cancelled task cannot be resumed.",
            danger=True,
        ),
    }[name]


def may_control(user) -> bool:
    """Whether `user` may retry, pause, resume and cancel tasks."""
    return bool(roles_of(user) & TaskControlPermission.write)


def may_answer(user) -> bool:
    """Whether `user` may answer escalations."""
    return bool(roles_of(user) & EscalationPermission.write)


def page_actions(task: Task, user) -> list[PageAction]:
    """The buttons `user` sees on the page of `task` as it stands now."""
    if not may_control(user):
        return []
    allowed = available_actions(task)
    # The constructive action first, the irreversible one last.
    return [_describe(task, name) for name in BUTTON_ORDER if name in allowed]


@roles_required(*TaskControlPermission.write)
@require_POST
def task_action(request: HttpRequest, task_id: str, action: str) -> HttpResponse:
    """Apply one button's action and come back to the page, saying what
    happened; a button pressed on a stale page gets a message, not an error."""
    task = get_object_or_404(Task, task_id=task_id)
    by = f"user:{request.user.get_username()}"
    # A NUL would be refused by PostgreSQL as a server error.
    reason = (request.POST.get("reason") or "").replace("\x00", "").strip()[:2000]
    reason = reason or PAGE_REASON
    try:
        if action == "retry":
            new_task, created = retry_task(task, by=by, reason=reason)
        else:
            new_task, deferred = task.request_control(action, by=by, reason=reason)
    except TransitionNotAllowed:
        task.refresh_from_db()
        messages.warning(
            request,
            f"Task {task.task_id} is {task.get_status_display().lower()} now and "
            f"cannot {action}; nothing was changed.",
        )
        return redirect("pages:task", task_id=task.task_id)
    except (LeaseUnavailable, VersionConflict):
        messages.warning(
            request,
            f"Task {task.task_id} is being changed right now; nothing was changed. "
            "Try again in a moment.",
        )
        return redirect("pages:task", task_id=task.task_id)
    if action == "retry" and new_task.pk != task.pk:
        verb = "is" if created else "was already"
        messages.success(
            request, f"{task.task_id} {verb} retried as {new_task.task_id}."
        )
    elif action != "retry" and deferred:
        messages.info(
            request,
            f"A worker is in the middle of a step: {task.task_id} will {action} "
            "when that step ends.",
        )
    else:
        messages.success(
            request,
            f"Task {task.task_id}: {action} done; it is "
            f"{new_task.get_status_display().lower()} now.",
        )
    return redirect("pages:task", task_id=new_task.task_id)
