"""API representations of child reports and completion analyses (read-only)."""

from __future__ import annotations

from rest_framework import serializers

from codex.children.models import ChildReport, CompletionAnalysis


class ChildReportSerializer(serializers.ModelSerializer):
    parent_task = serializers.CharField(source="fan_out.parent.task_id", read_only=True)
    child_task = serializers.CharField(
        source="child_task.task_id", read_only=True, allow_null=True, default=None
    )

    class Meta:
        model = ChildReport
        fields = [
            "id",
            "parent_task",
            "fan_out",
            "child_id",
            "status_type",
            "pr_number",
            "failure_reason",
            "body",
            "comment_id",
            "author",
            "reported_at",
            "received_at",
            "child_task",
            "is_current",
        ]
        read_only_fields = fields


class CompletionAnalysisSerializer(serializers.ModelSerializer):
    parent_task = serializers.CharField(source="fan_out.parent.task_id", read_only=True)

    class Meta:
        model = CompletionAnalysis
        fields = [
            "id",
            "parent_task",
            "fan_out",
            "merge_strategy",
            "prs_to_merge",
            "reasoning",
            "summary",
            "final_pr_number",
            "decided_by",
            "trigger",
            "successful_children",
            "failed_children",
            "partial_children",
            "ambiguous_children",
            "total_children",
            "successful_count",
            "failed_count",
            "partial_count",
            "ambiguous_count",
            "expected_child_count",
            "reporting_count",
            "discrepancy",
            "comment_ids",
            "analysed_at",
        ]
        read_only_fields = fields
