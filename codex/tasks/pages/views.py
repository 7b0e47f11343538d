"""Team pages: the request form, the task page, the dashboard. Each view checks
the login, validates input and calls one model method; the dashboard's queries
live in codex.tasks.pages.dashboard. The escalation inbox is in
codex.tasks.pages.inbox, the task page's phase table in codex.tasks.pages.phases,
its buttons and forms in codex.tasks.pages.actions and codex.tasks.pages.people.

Everything shown here may come from agents or GitHub issues, so it is
escaped by the templates; Markdown goes through `render_markdown`, which
never lets raw HTML or script URLs through.
"""

from __future__ import annotations

from datetime import UTC, timedelta
from typing import Any

from django.contrib import messages
from django.db.models import Count
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_http_methods, require_safe

from codex.accounts.decorators import allowed_to
from codex.accounts.permissions import (
    may,
    redact_events,
    sees_escalations,
    visible_tasks,
)
from codex.events.models import Event, EventKind
from codex.fleet.models import AgentRun, LiveOutput
from codex.fleet.readiness import installation_blockers
from codex.tasks.forms import EscalationAnswerForm, TaskRequestForm, new_form_token
from codex.tasks.models import (
    Artifact,
    CreatedBy,
    IdempotencyMismatch,
    Status,
    Task,
)
from codex.tasks.pages import dashboard as dashboard_queries
from codex.tasks.pages.actions import may_answer, page_actions
from codex.tasks.pages.markdown import render_markdown
from codex.tasks.pages.outcome import pull_request_link, task_outcome
from codex.tasks.pages.people import people_context
from codex.tasks.pages.phases import held_since, phase_rows
from codex.tasks.pages.reports import review_view, verification_view

# The page shows the latest events; older ones are in the console.
TIMELINE_LIMIT = 500
POLL_SECONDS = 3


def actor_of(request: HttpRequest) -> str:
    """How the event log names the person behind this request."""
    return f"user:{request.user.get_username()}"


# -- the request form ----------------------------------------------------------


@allowed_to("task.create")
@require_http_methods(["GET", "HEAD", "POST"])
def request_form(request: HttpRequest) -> HttpResponse:
    """GET: a blank form with a fresh token. POST: validate and create the task
    (once per token), then show it."""
    if request.method != "POST":
        form = TaskRequestForm(initial={"form_token": new_form_token()})
        return render(request, "codex/request_form.html", {"form": form})
    form = TaskRequestForm(request.POST)
    if form.is_valid():
        try:
            task, created = Task.objects.create_from_request(
                **form.request_fields(),
                created_by=CreatedBy.FORM,
                actor=actor_of(request),
                requested_by=request.user,
                idempotency_key=form.idempotency_key(request.user),
            )
        except IdempotencyMismatch as exc:
            # The same rendering was submitted before with other content
            # (edited after going back): say so, and let this one be new.
            form.add_error(
                None,
                f"This form was already submitted as task {exc.task.task_id}. "
                "Submit again to create a separate task from what is shown here.",
            )
            form.renew_token()
            return render(
                request,
                "codex/request_form.html",
                {"form": form, "earlier_task": exc.task},
                status=409,
            )
        if created:
            messages.success(request, f"Task {task.task_id} created.")
        else:
            messages.info(request, f"This request was already submitted: {task}.")
        return redirect("pages:task", task_id=task.task_id)
    return render(request, "codex/request_form.html", {"form": form}, status=400)


# -- the task page and its live fragment ---------------------------------------


def task_cost(task: Task) -> dict[str, Any]:
    """The task's spend so far: all its agent runs, in one aggregate."""
    spent = AgentRun.spend_of_task(task.pk)
    return {"cost": spent.cost_usd, "tokens": spent.tokens, "runs": spent.runs}


def documents_key(task: Task) -> str:
    """Changes when an artifact, a report or an escalation is added, so the live
    page can say that there is more to see."""
    counts = Task.objects.filter(pk=task.pk).aggregate(
        artifacts=Count("artifacts", distinct=True),
        verification=Count("verification_reports", distinct=True),
        review=Count("review_reports", distinct=True),
        escalations=Count("escalations", distinct=True),
    )
    return "-".join(str(counts[name]) for name in sorted(counts))


def event_key(event: Event) -> str:
    """Sorts like the event log's order (created_at, id), as a plain string."""
    moment = event.created_at.astimezone(UTC)
    return f"{moment:%Y%m%d%H%M%S%f}-{event.pk:015d}"


def latest_events(task: Task) -> tuple[list[Event], int]:
    """The latest TIMELINE_LIMIT events in order, and how many there are."""
    newest = list(task.events.order_by("-created_at", "-id")[:TIMELINE_LIMIT])
    newest.reverse()
    total = len(newest) if len(newest) < TIMELINE_LIMIT else task.events.count()
    return newest, total


def _status_context(task: Task, user) -> dict[str, Any]:
    held_at = held_since(task)
    return {
        "task": task,
        "phases": phase_rows(task, held_at=held_at),
        "held_since": held_at,
        "actions": page_actions(task, user),
        "may_answer": may_answer(user),
        **people_context(task, user),
        "cost": task_cost(task),
        "open_escalation": task.escalations.open().first()
        if sees_escalations(user)
        else None,
        "live_output": _live_output(task, user),
        # Written by workers from forge answers: a link only where a browser
        # can follow it (a web URL, or the console's page of a local one).
        "pr_link": pull_request_link(task, user),
    }


LIVE_OUTPUT_FRESH = timedelta(minutes=10)


def _live_output(task: Task, user) -> LiveOutput | None:
    """The output of the command an agent is running, for the team, while
    the task works (docs/domain/fleet.md#live-output)."""
    if task.status != Status.IN_PROGRESS or not sees_escalations(user):
        return None
    since = timezone.now() - LIVE_OUTPUT_FRESH
    return LiveOutput.objects.filter(task=task, updated_at__gte=since).first()


def _answer_form(task: Task, user) -> EscalationAnswerForm | None:
    """The open escalation's answer form, for a person who may answer it; a
    gate's is answered in the page's gate section (and in the inbox)."""
    escalation = task.escalations.open().first()
    if escalation is None or escalation.is_gate or not may_answer(user):
        return None
    return EscalationAnswerForm(escalation=escalation)


def _get_task(request: HttpRequest, task_id: str) -> Task:
    """The task if the person may see it; 404 otherwise (as the API)."""
    tasks = visible_tasks(request.user, Task.objects.select_related("repository"))
    return get_object_or_404(tasks, task_id=task_id)


@allowed_to("task.read")
@require_safe
def task_page(request: HttpRequest, task_id: str) -> HttpResponse:
    """The whole story of one task; polls for updates while it runs."""
    task = _get_task(request, task_id)
    events, total = latest_events(task)
    redact_events(request.user, events)
    latest_artifacts = Artifact.objects.filter(task=task).order_by(
        "name", "-created_at", "-id"
    )
    artifacts: dict[str, Artifact] = {}
    for artifact in latest_artifacts:
        artifacts.setdefault(artifact.name, artifact)
    context = {
        **_status_context(task, request.user),
        "request_html": {
            "description": render_markdown(task.description),
            "acceptance_criteria": render_markdown(task.acceptance_criteria),
        },
        "events": [(event, event_key(event)) for event in events],
        "events_total": total,
        "events_hidden": total - len(events),
        "last_event_id": max((event.pk for event in events), default=0),
        "artifacts": [
            (artifact, render_markdown(artifact.content))
            for artifact in artifacts.values()
        ],
        "verification_reports": [
            verification_view(report)
            for report in task.verification_reports.order_by("-cycle")
        ],
        "review_reports": [
            review_view(report) for report in task.review_reports.order_by("-cycle")
        ],
        "outcome": task_outcome(task, request.user),
        "event_kinds": EventKind.choices,
        "answer_form": _answer_form(task, request.user),
        "documents_key": documents_key(task),
        "poll_seconds": POLL_SECONDS,
        "fragment_url": reverse("pages:task_fragment", args=[task.task_id]),
    }
    return render(request, "codex/task.html", context)


@allowed_to("task.read")
@require_safe
def task_fragment(request: HttpRequest, task_id: str) -> JsonResponse:
    """What changed since the page last looked: the status block, the events
    after `after` (an event id), and totals the page checks itself against.

    `full=1` returns the whole visible timeline instead, for a page that finds
    it missed something (an event committed out of id order, or too many new
    ones at once).
    """
    task = _get_task(request, task_id)
    try:
        after = max(int(request.GET.get("after", "0")), 0)
    except ValueError:
        after = 0
    payload: dict[str, Any] = {
        "task_id": task.task_id,
        "status": task.status,
        "phase": task.phase,
        "version": task.version,
        "terminal": task.is_terminal,
        "status_html": render_to_string(
            "codex/_status.html", _status_context(task, request.user), request=request
        ),
        "documents_key": documents_key(task),
        "open_escalation_id": task.escalations.open()
        .values_list("pk", flat=True)
        .first(),
    }
    if request.GET.get("full") == "1":
        events, total = latest_events(task)
        redact_events(request.user, events)
        payload["timeline_html"] = render_to_string(
            "codex/_events.html",
            {"events": [(event, event_key(event)) for event in events]},
        )
        payload["events_hidden"] = total - len(events)
    else:
        events = list(task.events.filter(pk__gt=after).order_by("id")[:TIMELINE_LIMIT])
        redact_events(request.user, events)
        total = task.events.count()
        payload["events"] = [
            {
                "id": event.pk,
                "key": event_key(event),
                "html": render_to_string(
                    "codex/_events.html", {"events": [(event, event_key(event))]}
                ),
            }
            for event in events
        ]
    payload["events_total"] = total
    payload["last_event_id"] = max([after, *(event.pk for event in events)])
    return JsonResponse(payload)


# -- the dashboard -------------------------------------------------------------


@allowed_to("dashboard.read")
@require_safe
def dashboard(request: HttpRequest) -> HttpResponse:
    """Where the work stands, in numbers and bars (recent tasks: those the
    person may see)."""
    board = dashboard_queries.build()
    if not may(request.user, "task.read_all"):
        board.recent_tasks = [
            task
            for task in board.recent_tasks
            if task.requested_by_id == request.user.pk
        ]
    return render(
        request,
        "codex/dashboard.html",
        {
            "board": board,
            "blockers": installation_blockers(),
            "sees_inbox": may(request.user, "escalation.read"),
        },
    )
