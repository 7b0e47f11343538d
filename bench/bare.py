"""The ceiling of the intake figure: DRF's CreateAPIView doing intake's job
bare, mounted only in the benchmark's settings (bench.settings, bench.urls).

The same token authentication as POST /api/tasks/ (HashedTokenAuthentication,
IsAuthenticated), a ModelSerializer of the same five request fields, and one
INSERT into a table of those fields (the repository as its URL: no lookup).
No throttles, no idempotency, no event, no job, no 25-field answer: what
Django and DRF cost for an authenticated, validated one-row write.
"""

from __future__ import annotations

from django.db import connection, models
from rest_framework import generics, serializers
from rest_framework.permissions import IsAuthenticated

from codex.accounts.authentication import HashedTokenAuthentication
from codex.tasks.models.choices import Priority
from codex.tasks.models.task import TITLE_MAX_LENGTH

PATH = "bench/bare-tasks/"


class BareTask(models.Model):
    """A task request and nothing else (bench only; its table is made by
    ensure_table, not by a migration)."""

    repository = models.CharField(max_length=300)
    title = models.CharField(max_length=TITLE_MAX_LENGTH)
    description = models.TextField(blank=True, default="")
    priority = models.CharField(
        max_length=16, choices=Priority.choices, default=Priority.MEDIUM
    )
    acceptance_criteria = models.TextField(blank=True, default="")

    class Meta:
        app_label = "bench"
        db_table = "bench_baretask"

    def __str__(self) -> str:
        return self.title


class BareTaskSerializer(serializers.ModelSerializer):
    """DRF's own serializer of the five fields."""

    class Meta:
        model = BareTask
        fields = ["repository", "title", "description", "priority"]
        fields += ["acceptance_criteria"]


class BareTaskCreate(generics.CreateAPIView):
    """POST: validate, one INSERT, 201 with the five fields."""

    serializer_class = BareTaskSerializer
    authentication_classes = [HashedTokenAuthentication]
    permission_classes = [IsAuthenticated]
    throttle_classes: list = []


def ensure_table() -> None:
    """Create the bench table in the current database if it is missing."""
    if BareTask._meta.db_table in connection.introspection.table_names():
        return
    with connection.schema_editor() as editor:
        editor.create_model(BareTask)
