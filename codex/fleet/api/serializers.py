"""API representations of agent instances and agent runs (read-only)."""

from __future__ import annotations

from rest_framework import serializers

from codex.fleet.models import AgentInstance, AgentRun


class AgentInstanceSerializer(serializers.ModelSerializer):
    """An agent at work. The system prompt is left out: it is long and lists
    stay light; the admin shows it."""

    repository = serializers.CharField(source="repository.url", read_only=True)
    task = serializers.CharField(
        source="task.task_id", read_only=True, allow_null=True, default=None
    )
    parent = serializers.CharField(
        source="parent.instance_id", read_only=True, allow_null=True, default=None
    )

    class Meta:
        model = AgentInstance
        fields = [
            "id",
            "instance_id",
            "type",
            "role",
            "status",
            "repository",
            "task",
            "parent",
            "worktree_path",
            "branch_name",
            "base_branch",
            "session_name",
            "process_id",
            "process_host",
            "issue_number",
            "pr_number",
            "pr_url",
            "agent_number",
            "created_at",
            "started_at",
            "ended_at",
            "last_activity",
            "heartbeat_at",
        ]
        read_only_fields = fields


class AgentRunSerializer(serializers.ModelSerializer):
    """One agent session with its counts, tokens and cost."""

    task = serializers.CharField(
        source="task.task_id", read_only=True, allow_null=True, default=None
    )
    instance = serializers.CharField(
        source="instance.instance_id", read_only=True, allow_null=True, default=None
    )

    class Meta:
        model = AgentRun
        fields = [
            "id",
            "session_id",
            "status",
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
        ]
        read_only_fields = fields
