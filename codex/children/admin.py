"""The operator console for fan-outs, child reports and completion analyses."""

from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import Count, Q, QuerySet
from django.http import HttpRequest
from django_fsm import TransitionNotAllowed

from codex.children.models import ChildReport, CompletionAnalysis, FanOut
from codex.core.store import LeaseUnavailable, VersionConflict


def operator(request: HttpRequest) -> str:
    """How the event log names the operator behind an admin request."""
    return f"user:{request.user.get_username()}"


REPORT_FIELDS = [
    "child_id",
    "status_type",
    "pr_number",
    "failure_reason",
    "is_current",
    "author",
    "comment_id",
    "reported_at",
    "child_task",
]
ANALYSIS_FIELDS = [
    "merge_strategy",
    "prs_to_merge",
    "decided_by",
    "trigger",
    "reasoning",
    "summary",
    "final_pr_number",
    "total_children",
    "successful_count",
    "failed_count",
    "partial_count",
    "ambiguous_count",
    "successful_children",
    "failed_children",
    "partial_children",
    "ambiguous_children",
    "expected_child_count",
    "reporting_count",
    "discrepancy",
    "comment_ids",
    "analysed_at",
]


class ReadOnlyMixin:
    """Reports come from comments and analyses from the analysis: not typed in."""

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


class ChildReportInline(ReadOnlyMixin, admin.TabularInline):
    model = ChildReport
    fields = REPORT_FIELDS
    readonly_fields = REPORT_FIELDS
    extra = 0
    show_change_link = True
    ordering = ["child_id", "-reported_at"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[ChildReport]:
        return super().get_queryset(request).select_related("child_task")


class CompletionAnalysisInline(ReadOnlyMixin, admin.StackedInline):
    model = CompletionAnalysis
    fields = ANALYSIS_FIELDS
    readonly_fields = ANALYSIS_FIELDS
    extra = 0


@admin.register(FanOut)
class FanOutAdmin(admin.ModelAdmin):
    list_display = [
        "parent",
        "issue_number",
        "state",
        "expected_child_count",
        "reported",
        "deadline",
        "merge_strategy",
        "created_at",
        "lease_holder",
    ]
    list_filter = ["state", "analysis__merge_strategy", "analysis__discrepancy"]
    list_select_related = ["parent", "analysis"]
    search_fields = ["parent__task_id", "parent__title", "=issue_number"]
    show_full_result_count = False
    date_hierarchy = "created_at"
    actions = ["analyse_now", "close_expired"]
    inlines = [CompletionAnalysisInline, ChildReportInline]
    readonly_fields = [
        "parent",
        "issue_number",
        "expected_child_count",
        "window",
        "state",
        "created_at",
        "spawned_at",
        "window_opened_at",
        "deadline",
        "analysis_started_at",
        "analysis_trigger",
        "completed_at",
        "version",
        "lease_holder",
        "lease_expires_at",
        "updated_at",
    ]

    def get_queryset(self, request: HttpRequest) -> QuerySet[FanOut]:
        return (
            super()
            .get_queryset(request)
            .annotate(
                reported_children=Count("reports", filter=Q(reports__is_current=True))
            )
        )

    @admin.display(description="reported", ordering="reported_children")
    def reported(self, obj: FanOut) -> str:
        return f"{obj.reported_children} / {obj.expected_child_count}"

    @admin.display(description="merge strategy", ordering="analysis__merge_strategy")
    def merge_strategy(self, obj: FanOut) -> str:
        analysis = getattr(obj, "analysis", None)
        return analysis.merge_strategy if analysis else "—"

    def has_add_permission(self, request) -> bool:
        return False  # fan-outs start from the pipeline, for a parent task

    def has_delete_permission(self, request, obj=None) -> bool:
        return False  # the event log refers to them

    @admin.action(description="Analyse now (manual override; re-runs are idempotent)")
    def analyse_now(self, request: HttpRequest, queryset: QuerySet[FanOut]) -> None:
        done = 0
        for fan_out in queryset:
            try:
                fan_out.perform(
                    "trigger_manually",
                    by=operator(request),
                    reason="analysis triggered by an operator",
                )
            except (TransitionNotAllowed, LeaseUnavailable, VersionConflict) as exc:
                self.message_user(request, f"{fan_out}: {exc}", messages.ERROR)
                continue
            done += 1
        self.message_user(request, f"Analysed {done} fan-out(s).")

    @admin.action(description="Close the window if its deadline has passed")
    def close_expired(self, request: HttpRequest, queryset: QuerySet[FanOut]) -> None:
        closed = 0
        for fan_out in queryset:
            try:
                closed += fan_out.close_window(by=operator(request))
            except (LeaseUnavailable, VersionConflict) as exc:
                self.message_user(request, f"{fan_out}: {exc}", messages.ERROR)
        self.message_user(request, f"Closed {closed} window(s).")


@admin.register(ChildReport)
class ChildReportAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = [
        "child_id",
        "parent_task",
        "status_type",
        "pr_number",
        "is_current",
        "author",
        "reported_at",
        "child_task",
    ]
    list_filter = ["status_type", "is_current"]
    list_select_related = ["fan_out__parent", "child_task"]
    search_fields = [
        "child_id",
        "fan_out__parent__task_id",
        "author",
        "failure_reason",
        "=comment_id",
    ]
    show_full_result_count = False
    date_hierarchy = "reported_at"
    readonly_fields = [*REPORT_FIELDS, "fan_out", "body", "received_at"]
    fields = ["fan_out", *REPORT_FIELDS, "body", "received_at"]

    @admin.display(description="parent task", ordering="fan_out__parent__task_id")
    def parent_task(self, obj: ChildReport) -> str:
        return str(obj.fan_out.parent)


@admin.register(CompletionAnalysis)
class CompletionAnalysisAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = [
        "parent_task",
        "merge_strategy",
        "decided_by",
        "total_children",
        "successful_count",
        "failed_count",
        "partial_count",
        "ambiguous_count",
        "prs_to_merge",
        "final_pr_number",
        "discrepancy",
        "analysed_at",
    ]
    list_filter = ["merge_strategy", "decided_by", "trigger", "discrepancy"]
    list_select_related = ["fan_out__parent"]
    search_fields = ["fan_out__parent__task_id", "reasoning", "summary"]
    show_full_result_count = False
    date_hierarchy = "analysed_at"
    readonly_fields = ["fan_out", *ANALYSIS_FIELDS]
    fields = ["fan_out", *ANALYSIS_FIELDS]

    @admin.display(description="parent task", ordering="fan_out__parent__task_id")
    def parent_task(self, obj: CompletionAnalysis) -> str:
        return str(obj.fan_out.parent)
