"""The inbox: everything waiting for a person. Open escalations, newest
first, each with the one action that helps and its answer form (gates
included: a plan or merge approval, a spend cap, answered with the gate's own
decisions and rules, docs/gates.md), then the tasks blocked until a person
unblocks them, with their reason and the Retry button, and the paused ones
with Resume. And the answer
itself (the task resumes, fails or is cancelled, or the gate is decided). A
stale form gets a message saying what happened, not an error.
"""

from __future__ import annotations

from django.contrib import messages
from django.core.paginator import Paginator
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST, require_safe
from django_fsm import TransitionNotAllowed

from codex.accounts.decorators import allowed_to
from codex.core.store import LeaseUnavailable, VersionConflict
from codex.tasks.forms import EscalationAnswerForm
from codex.tasks.models import AlreadyResolved, Escalation, GateRefused, Task
from codex.tasks.pages.actions import may_control
from codex.tasks.pages.views import actor_of

INBOX_PAGE_SIZE = 20
BLOCKED_SHOWN = 50
BLOCKED_STEP = (
    "Fix what the reason says (a setting, a credential, the forge), then retry "
    "it now: nothing retries it on its own."
)
PAUSED_STEP = "Resume it when it should go on, or cancel it."


def open_escalations() -> QuerySet[Escalation]:
    return (
        Escalation.objects.open()
        .select_related("task", "task__repository", "gate")
        .order_by("-created_at", "-id")
    )


def _render_inbox(
    request: HttpRequest, bound: EscalationAnswerForm | None = None, status: int = 200
) -> HttpResponse:
    page = Paginator(open_escalations(), INBOX_PAGE_SIZE).get_page(
        request.GET.get("page")
    )
    forms = [
        bound
        if bound is not None and bound.escalation.pk == escalation.pk
        else EscalationAnswerForm(escalation=escalation)
        for escalation in page.object_list
    ]
    if bound is not None and all(f is not bound for f in forms):
        forms.insert(0, bound)  # keep the person's input even on another page
    blocked = list(
        Task.objects.held_for_a_person().select_related("repository")[
            : BLOCKED_SHOWN + 1
        ]
    )
    return render(
        request,
        "codex/inbox.html",
        {
            "page": page,
            "forms": forms,
            "blocked": blocked[:BLOCKED_SHOWN],
            "blocked_count": len(blocked)
            if len(blocked) <= BLOCKED_SHOWN
            else Task.objects.held_for_a_person().count(),
            "blocked_step": BLOCKED_STEP,
            "paused_step": PAUSED_STEP,
            "may_retry": may_control(request.user),
        },
        status=status,
    )


@allowed_to("escalation.read")
@require_safe
def inbox(request: HttpRequest) -> HttpResponse:
    """Everything waiting for a person: open escalations, newest first, each
    with its answer form, and the tasks blocked until a person unblocks them
    or paused."""
    return _render_inbox(request)


@allowed_to("escalation.resolve")
@require_POST
def resolve(request: HttpRequest, pk: int) -> HttpResponse:
    """Record a person's answer to an escalation; the task resumes, fails or is
    cancelled, or the gate is decided (its guards may refuse, saying why). A
    stale form (resolved meanwhile, or the task moved on) gets a
    message saying what happened instead of an error."""
    escalation = get_object_or_404(Escalation.objects.select_related("task"), pk=pk)
    form = EscalationAnswerForm(request.POST, escalation=escalation)
    if escalation.is_open and not form.is_valid():
        return _render_inbox(request, bound=form, status=400)
    task = escalation.task
    if not form.is_valid():
        # Resolved meanwhile: no point asking to fix a form that cannot apply.
        messages.warning(request, _already_resolved_message(escalation, task))
        return redirect(_back_to(request))
    try:
        task.resolve_escalation(
            escalation,
            decision=form.cleaned_data["decision"],
            by=actor_of(request),
            resolution=form.cleaned_data["resolution"],
            answers=form.answers,
            user=request.user,
            subject=form.cleaned_data["subject"],
        )
    except GateRefused as refused:
        messages.error(request, f"Not accepted: {refused.reason}.")
        return redirect(_back_to(request))
    except AlreadyResolved as exc:
        messages.warning(request, _already_resolved_message(exc.escalation, task))
    except TransitionNotAllowed:
        task.refresh_from_db()
        messages.warning(
            request,
            f"Task {task.task_id} is {task.get_status_display().lower()} now, "
            "no longer waiting for this answer; nothing was recorded.",
        )
    except (LeaseUnavailable, VersionConflict):
        messages.warning(
            request,
            f"Task {task.task_id} is being changed right now; nothing was "
            "recorded. Try again in a moment.",
        )
        return _render_inbox(request, bound=form, status=409)
    else:
        messages.success(
            request,
            f"Escalation of {task.task_id} resolved: "
            f"{escalation.get_decision_display().lower()}.",
        )
    return redirect(_back_to(request))


def _back_to(request: HttpRequest) -> str:
    """Where an answer came from (the task page), or the inbox."""
    target = request.POST.get("next", "")
    if target and url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return target
    return reverse("pages:inbox")


def _already_resolved_message(escalation: Escalation, task: Task) -> str:
    who = escalation.resolved_by_label or "someone else"
    when = (
        f" at {escalation.resolved_at:%Y-%m-%d %H:%M} UTC"
        if escalation.resolved_at
        else ""
    )
    decision = (
        f" ({escalation.get_decision_display().lower()})" if escalation.decision else ""
    )
    return (
        f"The escalation of {task.task_id} was already resolved by "
        f"{who}{when}{decision}; your answer was not recorded."
    )
