"""API representations of issue claims and backlog runs (read-only)."""

from __future__ import annotations

from rest_framework import serializers

from codex.claims.models import BacklogRun, IssueClaim


class IssueClaimSerializer(serializers.ModelSerializer):
    repository = serializers.CharField(source="repository.url", read_only=True)

    class Meta:
        model = IssueClaim
        fields = [
            "id",
            "repository",
            "number",
            "title",
            "state",
            "claimed_by",
            "claimed_at",
            "expires_at",
            "failure_count",
            "failed_at",
            "issue_closed",
            "total_attempts",
            "successful_closes",
            "failure_reasons",
            "last_session",
            "created_at",
        ]
        read_only_fields = fields


class BacklogRunSerializer(serializers.ModelSerializer):
    repository = serializers.CharField(source="repository.url", read_only=True)
    tasks = serializers.SlugRelatedField(
        many=True, read_only=True, slug_field="task_id"
    )

    class Meta:
        model = BacklogRun
        fields = [
            "id",
            "repository",
            "state",
            "sessions",
            "threshold",
            "consecutive_empty_rounds",
            "rounds",
            "issues_found",
            "last_check",
            "started_at",
            "terminated_at",
            "tasks",
        ]
        read_only_fields = fields
