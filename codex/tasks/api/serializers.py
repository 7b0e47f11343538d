"""API representations of tasks."""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework import serializers

from codex.repositories.models import (
    Forge,
    Repository,
    forge_of,
    normalize_repository_url,
)
from codex.tasks.models import Priority, Task
from codex.tasks.models.task import TITLE_MAX_LENGTH


class TaskCreateSerializer(serializers.Serializer):
    """The request fields of spec 002 §2.1, plus the repository's URL."""

    repository = serializers.CharField(max_length=300)
    title = serializers.CharField(max_length=TITLE_MAX_LENGTH)
    description = serializers.CharField(
        allow_blank=True, required=False, default="", max_length=50_000
    )
    priority = serializers.ChoiceField(
        choices=Priority.choices, default=Priority.MEDIUM
    )
    acceptance_criteria = serializers.CharField(
        allow_blank=True, required=False, default="", max_length=20_000
    )

    def validate_title(self, value: str) -> str:
        if any(ord(char) < 32 for char in value):
            raise serializers.ValidationError(
                "The title cannot contain control characters."
            )
        return value

    def validate_repository(self, value: str) -> Repository:
        try:
            url = normalize_repository_url(value)
        except DjangoValidationError as exc:
            raise serializers.ValidationError(exc.messages) from None
        repository = Repository.objects.filter(url=url).first()
        if repository is None:
            if forge_of(url) == Forge.LOCAL:
                # A path on the server is for an operator to register, not a client.
                raise serializers.ValidationError(
                    "Local repositories are registered by an operator in the console."
                )
            if settings.CODEX_INTAKE_REGISTERED_REPOSITORIES_ONLY:
                raise serializers.ValidationError(
                    "This repository is not registered with Codex; "
                    "ask an operator to add it."
                )
            repository, _ = Repository.objects.get_or_create(
                url=url, defaults={"registered_on_first_use": True}
            )
        if not repository.accepts_tasks:
            raise serializers.ValidationError(
                "This repository does not accept new tasks."
            )
        return repository


class TaskSerializer(serializers.ModelSerializer):
    """A task as clients see it: identity, request, state and progress."""

    repository = serializers.CharField(source="repository.url", read_only=True)
    request = serializers.SerializerMethodField()
    feedback_loops = serializers.SerializerMethodField()
    lease = serializers.SerializerMethodField()

    class Meta:
        model = Task
        fields = [
            "task_id",
            "created_at",
            "created_by",
            "repository",
            "request",
            "status",
            "phase",
            "current_agent",
            "phase_entered_at",
            "current_task",
            "total_tasks",
            "pr_url",
            "branch",
            "feedback_loops",
            "blocked_reason",
            "blocked_until",
            "retry_count",
            "version",
            "updated_at",
            "lease",
            "finished_at",
        ]
        read_only_fields = fields

    def get_request(self, task: Task) -> dict:
        return {
            "title": task.title,
            "description": task.description,
            "priority": task.priority,
            "acceptance_criteria": task.acceptance_criteria,
        }

    def get_feedback_loops(self, task: Task) -> dict:
        return {
            "verification": {
                "cycle_count": task.verification_cycles,
                "max_cycles": task.verification_max_cycles,
            },
            "review": {
                "cycle_count": task.review_cycles,
                "max_cycles": task.review_max_cycles,
            },
        }

    def get_lease(self, task: Task) -> dict | None:
        if not task.lease_is_active:
            return None
        return {"holder": task.lease_holder, "expires_at": task.lease_expires_at}


class TaskDetailSerializer(TaskSerializer):
    """The detail view adds what can be done next and the phase progress."""

    available_actions = serializers.SerializerMethodField()

    class Meta(TaskSerializer.Meta):
        fields = [
            *TaskSerializer.Meta.fields,
            "phase_progress",
            "errors",
            "available_actions",
        ]
        read_only_fields = fields

    def get_available_actions(self, task: Task) -> list[str]:
        return [
            name for name in task.available_status_actions() if name in CONTROL_ACTIONS
        ]


CONTROL_ACTIONS = ("pause", "resume", "cancel")


class ControlSerializer(serializers.Serializer):
    reason = serializers.CharField(
        max_length=2000, required=False, allow_blank=True, default=""
    )
