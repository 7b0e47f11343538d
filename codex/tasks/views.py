"""Team pages: the request form, the escalation inbox, the task page, the
dashboard. Each view checks the login, validates input and calls one model
method; the dashboard's queries live in codex.tasks.dashboard.

Everything shown here may come from agents or GitHub issues, so it is
escaped by the templates; Markdown goes through `render_markdown`, which
never lets raw HTML or script URLs through.
"""

from __future__ import annotations

import html
import re
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlsplit
from xml.etree.ElementTree import Element

import markdown
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import Count, QuerySet
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone
from django.utils.safestring import SafeString, mark_safe
from django.views.decorators.http import require_POST, require_safe
from django_fsm import TransitionNotAllowed
from markdown.extensions import Extension
from markdown.treeprocessors import Treeprocessor

from codex.accounts.decorators import roles_required
from codex.accounts.permissions import OPERATOR, TEAM
from codex.core.models import LeaseUnavailable, VersionConflict
from codex.events.models import Event
from codex.fleet.models import AgentRun
from codex.tasks import dashboard as dashboard_queries
from codex.tasks.forms import EscalationAnswerForm, TaskRequestForm, new_form_token
from codex.tasks.models import (
    AlreadyResolved,
    Artifact,
    CreatedBy,
    Escalation,
    IdempotencyMismatch,
    Phase,
    Task,
)

INBOX_PAGE_SIZE = 20
# The page shows the latest events; older ones are in the console.
TIMELINE_LIMIT = 500
POLL_SECONDS = 3


def actor_of(request: HttpRequest) -> str:
    """How the event log names the person behind this request."""
    return f"user:{request.user.get_username()}"


# -- Markdown, safely ----------------------------------------------------------

SAFE_URL_SCHEMES = frozenset({"http", "https", "mailto"})
# Browsers ignore these anywhere in a URL ("java\tscript:" is "javascript:").
_URL_IGNORED = re.compile(r"[\x00-\x20\x7f]+")


def is_safe_url(url: str) -> bool:
    """True for http(s), mailto and relative URLs; false for javascript:,
    data: and anything else, however it is disguised (entities, whitespace)."""
    # Markdown hides "&" as a placeholder until the end (automatic mail links
    # are entity-encoded that way): decode it as the browser will see it.
    text = (url or "").replace(markdown.util.AMP_SUBSTITUTE, "&")
    decoded = _URL_IGNORED.sub("", html.unescape(text)).lower()
    try:
        scheme = urlsplit(decoded).scheme
    except ValueError:
        return False
    return not scheme or scheme in SAFE_URL_SCHEMES


class _SafeElements(Treeprocessor):
    """Drops unsafe link targets and turns images into their alt text (an
    artifact must not make the reader's browser fetch anything)."""

    def run(self, root: Element) -> None:
        for element in root.iter():
            if element.tag == "a":
                if is_safe_url(element.get("href", "")):
                    element.set("rel", "nofollow noopener noreferrer")
                else:
                    element.attrib.pop("href", None)
            elif element.tag == "img":
                alt = element.get("alt", "")
                element.tag = "span"
                element.attrib.clear()
                element.text = f"[image: {alt}]" if alt else "[image]"


class _SafeMarkdown(Extension):
    """Raw HTML in the source is escaped as text instead of passed through."""

    def extendMarkdown(self, md: markdown.Markdown) -> None:  # noqa: N802
        md.preprocessors.deregister("html_block")
        md.inlinePatterns.deregister("html")
        # After the inline processor (20) has built the links.
        md.treeprocessors.register(_SafeElements(md), "codex_safe_elements", 5)


def render_markdown(text: str) -> SafeString:
    """Markdown → HTML that is safe to show, for untrusted text."""
    converter = markdown.Markdown(
        extensions=[_SafeMarkdown(), "fenced_code", "tables", "sane_lists"],
        output_format="html",
    )
    return mark_safe(converter.convert(text or ""))  # noqa: S308 - see _SafeMarkdown


# -- the request form ----------------------------------------------------------


@login_required
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


# -- the escalation inbox ------------------------------------------------------


def open_escalations() -> QuerySet[Escalation]:
    return (
        Escalation.objects.open()
        .select_related("task", "task__repository")
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
    return render(
        request, "codex/inbox.html", {"page": page, "forms": forms}, status=status
    )


@roles_required(OPERATOR, TEAM)
@require_safe
def inbox(request: HttpRequest) -> HttpResponse:
    """Open escalations, newest first, each with its answer form."""
    return _render_inbox(request)


@roles_required(OPERATOR, TEAM)
@require_POST
def resolve(request: HttpRequest, pk: int) -> HttpResponse:
    """Record a person's answer to an escalation; the task resumes, fails or is
    cancelled. A stale form (resolved meanwhile, or the task moved on) gets a
    message saying what happened instead of an error."""
    escalation = get_object_or_404(Escalation.objects.select_related("task"), pk=pk)
    form = EscalationAnswerForm(request.POST, escalation=escalation)
    if escalation.is_open and not form.is_valid():
        return _render_inbox(request, bound=form, status=400)
    task = escalation.task
    if not form.is_valid():
        # Resolved meanwhile: no point asking to fix a form that cannot apply.
        messages.warning(request, _already_resolved_message(escalation, task))
        return redirect("pages:inbox")
    try:
        task.resolve_escalation(
            escalation,
            decision=form.cleaned_data["decision"],
            by=actor_of(request),
            resolution=form.cleaned_data["resolution"],
            answers=form.answers,
            user=request.user,
        )
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
    return redirect("pages:inbox")


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


# -- the task page and its live fragment ---------------------------------------


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


def phase_rows(task: Task, now: datetime | None = None) -> list[dict[str, Any]]:
    """The six phases in order with status, start, end and duration (a phase in
    progress counts up to now)."""
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
        until = ended or (now if status == "in_progress" else None)
        rows.append(
            {
                "phase": phase,
                "label": label,
                "status": status,
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


def task_cost(task: Task) -> dict[str, Any]:
    """The task's spend so far: all its agent runs, in one aggregate."""
    spent = AgentRun.objects.filter(task=task).spend()
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


def _status_context(task: Task) -> dict[str, Any]:
    return {
        "task": task,
        "phases": phase_rows(task),
        "cost": task_cost(task),
        "open_escalation": task.escalations.open().first(),
        # Written by workers from forge answers: link it only if it is a web URL.
        "pr_link": task.pr_url
        if task.pr_url.startswith(("https://", "http://"))
        else "",
    }


def _get_task(task_id: str) -> Task:
    return get_object_or_404(Task.objects.select_related("repository"), task_id=task_id)


@login_required
@require_safe
def task_page(request: HttpRequest, task_id: str) -> HttpResponse:
    """The whole story of one task; polls for updates while it runs."""
    task = _get_task(task_id)
    events, total = latest_events(task)
    latest_artifacts = Artifact.objects.filter(task=task).order_by(
        "name", "-created_at", "-id"
    )
    artifacts: dict[str, Artifact] = {}
    for artifact in latest_artifacts:
        artifacts.setdefault(artifact.name, artifact)
    context = {
        **_status_context(task),
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
        "verification_reports": list(task.verification_reports.order_by("-cycle")),
        "review_reports": list(task.review_reports.order_by("-cycle")),
        "documents_key": documents_key(task),
        "poll_seconds": POLL_SECONDS,
        "fragment_url": reverse("pages:task_fragment", args=[task.task_id]),
    }
    return render(request, "codex/task.html", context)


@login_required
@require_safe
def task_fragment(request: HttpRequest, task_id: str) -> JsonResponse:
    """What changed since the page last looked: the status block, the events
    after `after` (an event id), and totals the page checks itself against.

    `full=1` returns the whole visible timeline instead, for a page that finds
    it missed something (an event committed out of id order, or too many new
    ones at once).
    """
    task = _get_task(task_id)
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
            "codex/_status.html", _status_context(task), request=request
        ),
        "documents_key": documents_key(task),
    }
    if request.GET.get("full") == "1":
        events, total = latest_events(task)
        payload["timeline_html"] = render_to_string(
            "codex/_events.html",
            {"events": [(event, event_key(event)) for event in events]},
        )
        payload["events_hidden"] = total - len(events)
    else:
        events = list(task.events.filter(pk__gt=after).order_by("id")[:TIMELINE_LIMIT])
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


@login_required
@require_safe
def dashboard(request: HttpRequest) -> HttpResponse:
    """Where the work stands, in numbers and bars."""
    return render(request, "codex/dashboard.html", {"board": dashboard_queries.build()})
