"""The operator console for tasks.

TaskAdmin, its inlines and helpers are here; its list's actions (retry,
pause, resume, cancel, break a lease) in codex.tasks.admin_actions; the pages
of a task's records (escalations, artifacts, reports, ...) in
codex.tasks.admin_records, imported below so that admin autodiscovery
registers them."""

from __future__ import annotations

from django.contrib import admin, messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import NoReverseMatch, reverse
from django.utils.html import format_html, format_html_join
from django_fsm import TransitionNotAllowed

from codex.children.console import fan_out_to_children
from codex.core.admin import CodexFSMAdminMixin, EstimatedCountPaginator
from codex.core.store import LeaseUnavailable, VersionConflict
from codex.events.models import Event
from codex.fleet.models import AgentRun
from codex.tasks import admin_records  # noqa: F401  (registers the record pages)
from codex.tasks.admin_actions import TaskListActions, operator
from codex.tasks.models import (
    AgentQuestion,
    Analysis,
    Artifact,
    BuildResult,
    Escalation,
    ReviewReport,
    Task,
    Triage,
    VerificationReport,
)

# The django-q2 pages an operator checks when jobs stall: (label, admin URL name).
# The queue page exists only with the ORM broker (Redis has no admin model).
JOB_QUEUE_PAGES = [
    ("Queued jobs", "admin:django_q_ormq_changelist"),
    ("Failed jobs", "admin:django_q_failure_changelist"),
    ("Successful jobs", "admin:django_q_success_changelist"),
    ("Scheduled jobs", "admin:django_q_schedule_changelist"),
]


def job_queue_links() -> list[tuple[str, str]]:
    """(label, URL) of the django-q2 admin pages registered on this site."""
    links = []
    for label, name in JOB_QUEUE_PAGES:
        try:
            links.append((label, reverse(name)))
        except NoReverseMatch:
            continue
    return links


class ReadOnlyInline(admin.TabularInline):
    extra = 0
    can_delete = False
    show_change_link = False

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


class EventInline(ReadOnlyInline):
    model = Event
    fields = ["created_at", "kind", "field", "source", "target", "actor", "reason"]
    readonly_fields = fields
    ordering = ["created_at", "id"]
    verbose_name_plural = "History (event log)"


class EscalationInline(ReadOnlyInline):
    model = Escalation
    fields = [
        "created_at",
        "phase",
        "reason",
        "detail",
        "questions",
        "resolved_at",
        "resolved_by_label",
        "decision",
        "resolution",
        "consumed_at",
    ]
    readonly_fields = fields
    show_change_link = True


class ArtifactInline(ReadOnlyInline):
    model = Artifact
    fields = ["name", "created_at", "sha256"]
    readonly_fields = fields
    show_change_link = True


class VerificationReportInline(ReadOnlyInline):
    model = VerificationReport
    fields = [
        "cycle",
        "created_at",
        "recommendation",
        "tests_passed",
        "tests_failed",
        "tests_total",
    ]
    readonly_fields = fields
    show_change_link = True


class ReviewReportInline(ReadOnlyInline):
    model = ReviewReport
    fields = ["cycle", "created_at", "assessment", "pr_url"]
    readonly_fields = fields
    show_change_link = True


class TriageInline(ReadOnlyInline):
    model = Triage
    fields = ["type", "scope", "complexity", "should_proceed", "rejection_reason"]
    readonly_fields = fields


class AnalysisInline(ReadOnlyInline):
    model = Analysis
    fields = ["files", "patterns", "test_requirement", "must_do", "must_not_do"]
    readonly_fields = fields
    show_change_link = True


class BuildResultInline(ReadOnlyInline):
    model = BuildResult
    fields = ["cycle", "created_at", "tests_passed", "lint_passed", "type_check_passed"]
    readonly_fields = fields
    show_change_link = True


class AgentQuestionInline(ReadOnlyInline):
    model = AgentQuestion
    fields = ["asked_at", "from_role", "to_role", "question", "answer", "answered_at"]
    readonly_fields = fields


class AgentRunInline(ReadOnlyInline):
    model = AgentRun
    fields = [
        "session_id",
        "status",
        "started_at",
        "ended_at",
        "tool_count",
        "files_changed",
        "input_tokens",
        "output_tokens",
        "cost_usd",
        "error",
    ]
    readonly_fields = fields
    ordering = ["started_at", "id"]
    verbose_name_plural = "Agent runs"


@admin.register(Task)
class TaskAdmin(TaskListActions, CodexFSMAdminMixin, admin.ModelAdmin):
    fsm_fields = ["status", "phase"]
    list_display = [
        "task_id",
        "title",
        "repository",
        "priority",
        "status",
        "phase",
        "current_agent",
        "created_by",
        "created_at",
        "lease_holder",
    ]
    list_filter = ["status", "phase", "priority", "created_by", "created_at"]
    list_select_related = ["repository"]
    search_fields = ["task_id", "title"]
    show_full_result_count = False
    paginator = EstimatedCountPaginator
    actions = [
        "retry_tasks",
        "pause_tasks",
        "resume_tasks",
        "cancel_tasks",
        "force_break_lease",
        fan_out_to_children,
    ]
    inlines = [
        TriageInline,
        AnalysisInline,
        EscalationInline,
        AgentQuestionInline,
        BuildResultInline,
        VerificationReportInline,
        ReviewReportInline,
        ArtifactInline,
        AgentRunInline,
        EventInline,
    ]
    readonly_fields = [
        "task_id",
        "created_at",
        "created_by",
        "repository",
        "title",
        "description",
        "priority",
        "acceptance_criteria",
        "status",
        "phase",
        "current_agent",
        "phase_entered_at",
        "phase_progress",
        "phases",
        "needs_clarification",
        "current_task",
        "total_tasks",
        "branch",
        "pr_url",
        "commits",
        "ci_passing",
        "pr_merged",
        "verification_cycles",
        "verification_max_cycles",
        "review_cycles",
        "review_max_cycles",
        "feedback_history",
        "errors",
        "retry_count",
        "blocked_reason",
        "blocked_until",
        "finished_at",
        "version",
        "lease_holder",
        "lease_expires_at",
        "updated_at",
        "job_queue",
        "live_page",
    ]
    fieldsets = [
        (
            "Request (immutable)",
            {
                "fields": [
                    "live_page",
                    "task_id",
                    "repository",
                    "created_by",
                    "created_at",
                    "title",
                    "description",
                    "priority",
                    "acceptance_criteria",
                ]
            },
        ),
        (
            "State",
            {
                "fields": [
                    "status",
                    "phase",
                    "current_agent",
                    "phase_entered_at",
                    "blocked_reason",
                    "blocked_until",
                    "retry_count",
                    "finished_at",
                ]
            },
        ),
        (
            "Progress",
            {
                "fields": [
                    "phases",
                    "needs_clarification",
                    "current_task",
                    "total_tasks",
                    "branch",
                    "pr_url",
                    "commits",
                    "ci_passing",
                    "pr_merged",
                ]
            },
        ),
        (
            "Feedback loops",
            {
                "fields": [
                    "verification_cycles",
                    "verification_max_cycles",
                    "review_cycles",
                    "review_max_cycles",
                    "feedback_history",
                ]
            },
        ),
        ("Errors", {"fields": ["errors"], "classes": ["collapse"]}),
        (
            "Concurrency",
            {"fields": ["version", "lease_holder", "lease_expires_at", "updated_at"]},
        ),
        ("Background jobs", {"fields": ["job_queue"]}),
    ]

    @admin.display(description="phases")
    def phases(self, task: Task) -> str:
        """The phase progress as a table: status, start, end, invocations."""
        rows = [
            (
                phase,
                progress.get("status", "pending"),
                progress.get("started_at", "")[:19].replace("T", " "),
                progress.get("completed_at", "")[:19].replace("T", " "),
                progress.get("agent_invocations", 0),
            )
            for phase, progress in task.phase_progress.items()
        ]
        body = format_html_join(
            "",
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            rows,
        )
        return format_html(
            "<table><tr><th>phase</th><th>status</th><th>started</th>"
            "<th>completed</th><th>agent runs</th></tr>{}</table>",
            body,
        )

    def has_add_permission(self, request) -> bool:
        return False  # tasks come from intake (form, API, GitHub), not a blank form

    def has_delete_permission(self, request, obj=None) -> bool:
        return False  # the event log refers to tasks; cancel instead

    def save_model(self, request, obj, form, change) -> None:
        # Every field here is read-only: the page only carries transition buttons.
        # Saving anyway would collide with a worker's lease for nothing.
        if not change or form.changed_data:
            super().save_model(request, obj, form, change)

    def operator_transitions(self, request: HttpRequest, task: Task) -> set[str]:
        """Transitions an operator may trigger on this task now."""
        return {
            transition.name
            for field in self.fsm_fields
            for transition in getattr(task, f"get_available_user_{field}_transitions")(
                user=request.user
            )
            if self.is_fsm_transition_visible(transition)
        }

    def response_change(self, request: HttpRequest, obj: Task) -> HttpResponse:
        name = request.POST.get(self.fsm_post_param)
        if name and name not in self.operator_transitions(request, obj):
            self.message_user(
                request,
                f"{name!r} is not allowed on {obj} now (or not an operator action).",
                messages.ERROR,
            )
            return HttpResponseRedirect(request.path)
        return super().response_change(request, obj)

    def _apply_fsm_transition(
        self, *, obj: Task, transition_name: str, request, kwargs=None
    ) -> bool:
        """Operator transitions run like every other: under the lease, logged."""
        try:
            _, deferred = obj.request_control(transition_name, by=operator(request))
            if deferred:
                self.message_user(
                    request,
                    f"{obj}: a worker is in a step; {transition_name} will "
                    "happen when that step ends.",
                    messages.WARNING,
                )
                return True
        except TransitionNotAllowed:
            self.message_user(
                request, f"{transition_name!r} is not allowed now.", messages.ERROR
            )
            return False
        except (LeaseUnavailable, VersionConflict) as exc:
            self.message_user(
                request, f"{transition_name!r} did not happen: {exc}.", messages.ERROR
            )
            return False
        self.message_user(
            request, f"{obj}: {transition_name} done; status is now {obj.status}."
        )
        return True

    @admin.display(description="team page")
    def live_page(self, task: Task) -> str:
        """The team's live page of the task (its outcome, reports, timeline)."""
        url = reverse("pages:task", args=[task.task_id])
        return format_html('<a href="{}" id="live-page">{}</a>', url, url)

    @admin.display(description="django-q2 queue")
    def job_queue(self, task: Task | None = None) -> str:
        links = job_queue_links()
        if not links:
            return "—"
        return format_html_join(
            " · ",
            '<a href="{}" class="job-queue-link">{}</a>',
            [(url, label) for label, url in links],
        )
