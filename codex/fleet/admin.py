"""The operator console for the fleet: instances, their relationships, runs.

The instance list is the fleet's dashboard: "Running" lists the instances not
terminated (docs/domain/fleet.md#instance-status), "Review loop" the review-loop
tracking (docs/domain/fleet.md#review-loop).
"""

from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.html import format_html, format_html_join
from django_fsm import TransitionNotAllowed

from codex.core.admin import CodexFSMAdminMixin, EstimatedCountPaginator
from codex.core.store import VersionConflict
from codex.fleet.models import (
    AgentInstance,
    AgentRun,
    HealthStatus,
    InstanceRelationship,
    ReviewLoopStatus,
)

MULTIPLE_REVIEWS = "multiple"


def operator(request: HttpRequest) -> str:
    return f"user:{request.user.get_username()}"


class RunningFilter(admin.SimpleListFilter):
    """The running instances: everything not terminated."""

    title = "running"
    parameter_name = "running"

    def lookups(self, request, model_admin):
        return [("yes", "Running"), ("no", "Terminated")]

    def queryset(self, request, queryset):
        if self.value() == "yes":
            return queryset.running()
        if self.value() == "no":
            return queryset.exclude(pk__in=queryset.running().values("pk"))
        return queryset


class ReviewLoopFilter(admin.SimpleListFilter):
    """Review-loop status (NORMAL / APPROACHING_LIMIT >= 3 / AT_LIMIT >= 5), and
    the tracking list: coding agents not terminated with >= 2 reviews."""

    title = "review loop"
    parameter_name = "review_loop"

    def lookups(self, request, model_admin):
        return [
            *ReviewLoopStatus.choices,
            (MULTIPLE_REVIEWS, "Multiple reviews (≥ 2, running coding agents)"),
        ]

    def queryset(self, request, queryset):
        value = self.value()
        if value == MULTIPLE_REVIEWS:
            return queryset.review_loops()
        if value in ReviewLoopStatus.values:
            return queryset.filter(review_loop_status=value)
        return queryset


class ReadOnlyInline(admin.TabularInline):
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


class ReviewsInline(ReadOnlyInline):
    model = InstanceRelationship
    fk_name = "parent"
    fields = ["child", "relationship_type", "review_iteration", "created_at"]
    readonly_fields = fields
    verbose_name_plural = "Spawned instances"


class TransitionsViaPerform:
    """Admin transition buttons run like every other caller: through perform()."""

    def _apply_fsm_transition(
        self, *, obj, transition_name: str, request, kwargs=None
    ) -> bool:
        try:
            obj.perform(transition_name, by=operator(request), **(kwargs or {}))
        except TransitionNotAllowed:
            self.message_user(
                request, f"{transition_name!r} is not allowed now.", messages.ERROR
            )
            return False
        except VersionConflict as exc:
            self.message_user(
                request, f"{transition_name!r} did not happen: {exc}.", messages.ERROR
            )
            return False
        self.message_user(request, f"{obj}: {transition_name} done ({obj.status}).")
        return True


@admin.register(AgentInstance)
class AgentInstanceAdmin(TransitionsViaPerform, CodexFSMAdminMixin, admin.ModelAdmin):
    fsm_fields = ["status"]
    list_display = [
        "instance_id",
        "type",
        "role",
        "status",
        "repository",
        "task",
        "issue_number",
        "pr_number",
        "parent",
        "review_loop",
        "created_at",
        "last_activity",
        "heartbeat_at",
    ]
    # No filter by the values a column holds ("role"): listing them reads
    # every instance (docs/deployment.md#measured).
    list_filter = [RunningFilter, ReviewLoopFilter, "type", "status", "created_at"]
    list_select_related = ["repository", "task", "parent"]
    search_fields = ["instance_id", "branch_name", "worktree_path", "task__task_id"]
    show_full_result_count = False
    paginator = EstimatedCountPaginator
    inlines = [ReviewsInline]
    readonly_fields = [
        "instance_id",
        "type",
        "role",
        "status",
        "repository",
        "task",
        "parent",
        "agent_number",
        "worktree_path",
        "branch_name",
        "base_branch",
        "session_name",
        "process_id",
        "process_host",
        "issue_number",
        "pr_number",
        "pr_url",
        "system_prompt",
        "created_at",
        "started_at",
        "ended_at",
        "last_activity",
        "heartbeat_at",
        "version",
        "updated_at",
        "tool_calls",
    ]

    def get_queryset(self, request: HttpRequest) -> QuerySet[AgentInstance]:
        return super().get_queryset(request).with_review_loop_status()

    def has_add_permission(self, request) -> bool:
        return False  # instances are started by workers, with a worktree

    def has_delete_permission(self, request, obj=None) -> bool:
        return False  # events and runs refer to instances; terminate instead

    @admin.display(description="Review loop", ordering="highest_review_iteration")
    def review_loop(self, obj: AgentInstance) -> str:
        if not obj.total_reviews:
            return "—"
        return f"{obj.review_loop_status} (iteration {obj.highest_review_iteration})"

    @admin.display(description="Tool calls (event log)")
    def tool_calls(self, obj: AgentInstance) -> str:
        rows = format_html_join(
            "",
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            (
                (
                    event.created_at,
                    event.data.get("tool_name", ""),
                    "ok" if event.data.get("success") else "failed",
                    event.data.get("git_commit_hash", ""),
                    event.data.get("status_change") or event.data.get("error_message"),
                )
                for event in obj.tool_events()
            ),
        )
        if not rows:
            return "—"
        return format_html(
            "<table><tr><th>When</th><th>Tool</th><th>Result</th><th>Commit</th>"
            "<th>Status change / error</th></tr>{}</table>",
            rows,
        )


@admin.register(InstanceRelationship)
class InstanceRelationshipAdmin(admin.ModelAdmin):
    list_display = [
        "parent",
        "child",
        "relationship_type",
        "review_iteration",
        "created_at",
    ]
    list_filter = ["relationship_type", "review_iteration"]
    list_select_related = ["parent", "child"]
    search_fields = ["parent__instance_id", "child__instance_id"]
    show_full_result_count = False
    readonly_fields = [
        "parent",
        "child",
        "relationship_type",
        "review_iteration",
        "created_at",
        "metadata",
    ]

    def has_add_permission(self, request) -> bool:
        return False


class HealthFilter(admin.SimpleListFilter):
    """A run's health (docs/domain/fleet.md#productivity), computed in the
    database."""

    title = "health"
    parameter_name = "health"

    def lookups(self, request, model_admin):
        return HealthStatus.choices

    def queryset(self, request, queryset):
        if self.value() in HealthStatus.values:
            return queryset.with_health().filter(health=self.value())
        return queryset


@admin.register(AgentRun)
class AgentRunAdmin(TransitionsViaPerform, CodexFSMAdminMixin, admin.ModelAdmin):
    fsm_fields = ["status"]
    list_display = [
        "session_id",
        "status",
        "health",
        "started_at",
        "ended_at",
        "task",
        "instance",
        "tool_count",
        "files_changed",
        "issues_closed",
        "productivity_score_display",
        "metrics_score_display",
        "cost_usd",
    ]
    list_filter = ["status", HealthFilter, "started_at"]
    list_select_related = ["task", "instance"]
    search_fields = ["session_id", "task__task_id", "instance__instance_id"]
    show_full_result_count = False
    paginator = EstimatedCountPaginator
    readonly_fields = [
        "session_id",
        "status",
        "health",
        "warnings_display",
        "productivity_score_display",
        "metrics_score_display",
        "task",
        "instance",
        "started_at",
        "ended_at",
        "heartbeat_at",
        "issues_worked",
        "closed_issues",
        "issues_closed",
        "tool_count",
        "files_changed",
        "response_length",
        "input_tokens",
        "output_tokens",
        "cache_write_tokens",
        "cache_read_tokens",
        "cost_usd",
        "error",
        "imported_from",
        "version",
        "updated_at",
    ]

    def has_add_permission(self, request) -> bool:
        return False  # runs come from workers and the session-log import

    def has_delete_permission(self, request, obj=None) -> bool:
        return False

    @admin.display(description="Health")
    def health(self, obj: AgentRun) -> str:
        return obj.health_status

    @admin.display(description="Productivity score (000 SessionOutcome)")
    def productivity_score_display(self, obj: AgentRun) -> str:
        return f"{obj.productivity_score:.2f}"

    @admin.display(description="Metrics score (000 ProductivityMetrics)")
    def metrics_score_display(self, obj: AgentRun) -> str:
        return f"{obj.metrics_score:.2f}"

    @admin.display(description="Warnings")
    def warnings_display(self, obj: AgentRun) -> str:
        return "\n".join(obj.warnings) or "—"
