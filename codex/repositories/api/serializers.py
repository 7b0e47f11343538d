"""API representation of repositories; operators register new ones by URL."""

from __future__ import annotations

from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework import serializers

from codex.core.api.serializers import StrictInputMixin
from codex.repositories.models import Repository, normalize_repository_url


class RepositorySerializer(StrictInputMixin, serializers.ModelSerializer):
    """A repository; operators register new ones by URL."""

    full_name = serializers.CharField(read_only=True)

    class Meta:
        model = Repository
        fields = [
            "id",
            "url",
            "full_name",
            "forge",
            "default_branch",
            "accepts_tasks",
            "test_command",
            "lint_command",
            "type_check_command",
            "detected_environment",
            "detected_at_commit",
            "registered_on_first_use",
            "created_at",
        ]
        read_only_fields = [
            "id",
            "full_name",
            "forge",
            "detected_environment",
            "detected_at_commit",
            "registered_on_first_use",
            "created_at",
        ]

    def validate_url(self, value: str) -> str:
        try:
            url = normalize_repository_url(value)
        except DjangoValidationError as exc:
            raise serializers.ValidationError(exc.messages) from None
        if Repository.objects.filter(url=url).exists():
            raise serializers.ValidationError("This repository is already registered.")
        return url
