"""The operator console's pages for a task's records: escalations, artifacts,
verification and review reports, triage, analysis, build results, agent
questions and learnings. Each is a small read-mostly ModelAdmin; they live
apart from TaskAdmin (codex.tasks.admin), which imports this module so that
Django's admin autodiscovery registers them."""

from __future__ import annotations

from django.contrib import admin
from django.urls import reverse
from django.utils.html import format_html

from codex.tasks.models import (
    AgentQuestion,
    Analysis,
    Artifact,
    BuildResult,
    Escalation,
    Learning,
    ReviewReport,
    Triage,
    VerificationReport,
)


@admin.register(Escalation)
class EscalationAdmin(admin.ModelAdmin):
    list_display = [
        "task",
        "phase",
        "reason",
        "created_at",
        "resolved_at",
        "decision",
        "answer",
    ]
    list_filter = [
        "reason",
        "phase",
        ("resolved_at", admin.EmptyFieldListFilter),
        "decision",
    ]
    list_select_related = ["task"]
    search_fields = ["task__task_id", "detail"]
    readonly_fields = [
        "task",
        "phase",
        "reason",
        "detail",
        "questions",
        "created_at",
        "resolved_at",
        "resolved_by",
        "resolved_by_label",
        "resolution",
        "answers",
        "decision",
        "consumed_at",
    ]

    @admin.display(description="Answer")
    def answer(self, escalation: Escalation) -> str:
        """Where an open escalation (a gate's too) is answered: the inbox."""
        if not escalation.is_open:
            return "—"
        url = reverse("pages:inbox") + f"#escalation-{escalation.pk}"
        return format_html('<a href="{}">in the inbox</a>', url)

    def has_add_permission(self, request) -> bool:
        return False


@admin.register(Artifact)
class ArtifactAdmin(admin.ModelAdmin):
    list_display = ["task", "name", "created_at", "sha256"]
    list_filter = ["name"]
    list_select_related = ["task"]
    search_fields = ["task__task_id", "name"]
    readonly_fields = ["task", "name", "sha256", "content", "created_at"]

    def has_add_permission(self, request) -> bool:
        return False


class RecordedReportAdmin(admin.ModelAdmin):
    """A report of an agent's: recorded by the pipeline, never typed in or
    edited here."""

    list_select_related = ["task"]
    search_fields = ["task__task_id"]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


@admin.register(VerificationReport)
class VerificationReportAdmin(RecordedReportAdmin):
    list_display = [
        "task",
        "cycle",
        "recommendation",
        "tests_passed",
        "tests_failed",
        "created_at",
    ]
    list_filter = ["recommendation"]


@admin.register(ReviewReport)
class ReviewReportAdmin(RecordedReportAdmin):
    list_display = ["task", "cycle", "assessment", "created_at"]
    list_filter = ["assessment"]


@admin.register(Triage)
class TriageAdmin(admin.ModelAdmin):
    list_display = ["task", "type", "scope", "complexity", "should_proceed"]
    list_filter = ["type", "scope", "complexity", "should_proceed"]
    list_select_related = ["task"]
    search_fields = ["task__task_id"]


@admin.register(Analysis)
class AnalysisAdmin(admin.ModelAdmin):
    list_display = ["task", "completed_at"]
    list_select_related = ["task"]
    search_fields = ["task__task_id", "brief"]


@admin.register(BuildResult)
class BuildResultAdmin(admin.ModelAdmin):
    list_display = [
        "task",
        "cycle",
        "tests_passed",
        "lint_passed",
        "type_check_passed",
        "created_at",
    ]
    list_filter = ["tests_passed", "lint_passed", "type_check_passed"]
    list_select_related = ["task"]
    search_fields = ["task__task_id"]


@admin.register(AgentQuestion)
class AgentQuestionAdmin(admin.ModelAdmin):
    list_display = [
        "task",
        "from_role",
        "to_role",
        "short_question",
        "asked_at",
        "answered_at",
    ]
    list_filter = ["from_role", "to_role", ("answered_at", admin.EmptyFieldListFilter)]
    list_select_related = ["task"]
    search_fields = ["task__task_id", "question", "answer"]

    @admin.display(description="question")
    def short_question(self, question: AgentQuestion) -> str:
        return question.question[:80]


@admin.register(Learning)
class LearningAdmin(admin.ModelAdmin):
    list_display = [
        "repository",
        "agent",
        "type",
        "short_content",
        "created_at",
        "task",
    ]
    list_filter = ["agent", "type"]
    list_select_related = ["repository", "task"]
    search_fields = ["content", "repository__url"]

    @admin.display(description="content")
    def short_content(self, learning: Learning) -> str:
        return learning.content[:80]
