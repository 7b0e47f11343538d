"""The task page's gate and steering forms (docs/gates.md): approve the plan
or the merge a task waits for, send its plan back with changes, and send the
agents a message. The rules are the API's (codex.accounts.permissions:
task.decide_gate and task.steer; the gate's guards refuse the requester
alone, Codex itself and a stale plan, and the page says why).
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.views.decorators.http import require_POST

from codex.accounts.decorators import roles_required
from codex.accounts.permissions import GatePermission, SteerPermission, roles_of
from codex.core.store import LeaseUnavailable, VersionConflict
from codex.tasks.models import (
    Decider,
    GateDecision,
    GateRefused,
    Status,
    SteeringSource,
    Task,
)
from codex.tasks.models.steering import MESSAGE_MAX_LENGTH, send_message

DECISIONS = {
    "approve": GateDecision.APPROVED,
    "changes": GateDecision.CHANGES_REQUESTED,
}


def may_decide(user) -> bool:
    """Whether `user`'s role lets them decide gates."""
    return bool(roles_of(user) & GatePermission.write)


def may_steer(user) -> bool:
    """Whether `user`'s role lets them message a task's agents."""
    return bool(roles_of(user) & SteerPermission.write)


def people_context(task: Task, user) -> dict[str, Any]:
    """What the task page shows of gates and steering for `user`."""
    gate = task.open_gate if task.status == Status.ESCALATED else None
    return {
        "open_gate": gate,
        "may_decide": gate is not None and may_decide(user),
        "may_steer": not task.is_terminal and may_steer(user),
        "steering_max": MESSAGE_MAX_LENGTH,
    }


def _clean(request: HttpRequest, name: str, limit: int) -> str:
    return (request.POST.get(name) or "").replace("\x00", "").strip()[:limit]


@roles_required(*GatePermission.write)
@require_POST
def gate_decision(request: HttpRequest, task_id: str) -> HttpResponse:
    """Approve, or ask for changes; a refusal is a message saying why."""
    task = get_object_or_404(Task, task_id=task_id)
    decision = DECISIONS.get(request.POST.get("decision") or "")
    if decision is None:
        messages.error(request, "Choose approve or ask for changes.")
        return redirect("pages:task", task_id=task.task_id)
    decider = Decider(
        label=f"user:{request.user.get_username()}",
        user=request.user,
        may_approve=True,
    )
    try:
        task.decide_gate(
            decision,
            decider=decider,
            subject=_clean(request, "subject", 64),
            feedback=_clean(request, "feedback", 10_000),
        )
    except GateRefused as refused:
        messages.error(request, f"Not accepted: {refused.reason}.")
        return redirect("pages:task", task_id=task.task_id)
    except (LeaseUnavailable, VersionConflict):
        messages.warning(
            request, "The task is being changed right now; try again in a moment."
        )
        return redirect("pages:task", task_id=task.task_id)
    done = "approved" if decision == GateDecision.APPROVED else "sent back"
    messages.success(request, f"{task.task_id}: {done}.")
    return redirect("pages:task", task_id=task.task_id)


@roles_required(*SteerPermission.write)
@require_POST
def steer(request: HttpRequest, task_id: str) -> HttpResponse:
    """Store a message for the agents; they read it before their next step."""
    task = get_object_or_404(Task, task_id=task_id)
    try:
        send_message(
            task,
            request.POST.get("message") or "",
            author=f"user:{request.user.get_username()}",
            source=SteeringSource.PAGE,
            user=request.user,
        )
    except ValueError as exc:
        messages.error(request, f"Not sent: {exc}.")
    else:
        messages.success(request, "Sent: the agent reads it before its next step.")
    return redirect("pages:task", task_id=task.task_id)
