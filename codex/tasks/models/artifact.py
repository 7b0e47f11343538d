"""Artifacts: the documents agents leave behind (docs/domain/tasks.md#artifacts)."""

from __future__ import annotations

import hashlib

from django.db import models
from django.utils import timezone

from codex.core.store import hot_values

# Which container each document lives in (docs/domain/tasks.md#artifacts).
CONTAINERS = {
    "spec.md": "agent-spec",
    "plan.md": "agent-spec",
    "tasks.md": "agent-spec",
    "research.md": "agent-spec",
    "release-notes.md": "agent-release",
}


class ArtifactQuerySet(models.QuerySet):
    @hot_values
    def contents_of(self, task_id: int, *names: str) -> models.QuerySet:
        """(name, content) of the task's documents named, newest first within
        each name."""
        return (
            self.filter(task_id=task_id, name__in=names)
            .order_by("name", "-created_at", "-id")
            .values_list("name", "content")
        )


class Artifact(models.Model):
    """One version of a task's document, content-addressed by SHA-256.

    Storing the same content twice returns the existing row (the same content
    gives the same result, docs/domain/concurrency.md#idempotency); a changed
    document is a new version, and the latest one by `created_at` is current.
    `path` is its storage name (docs/domain/tasks.md#artifacts).
    """

    task = models.ForeignKey(
        "tasks.Task", on_delete=models.CASCADE, related_name="artifacts"
    )
    name = models.CharField(max_length=100)
    sha256 = models.CharField(max_length=64)
    content = models.TextField()
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    objects = ArtifactQuerySet.as_manager()

    class Meta:
        ordering = ["task", "name", "-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["task", "name", "sha256"], name="artifact_content_addressed"
            )
        ]
        indexes = [
            models.Index(fields=["task", "name", "-created_at"], name="artifact_latest")
        ]

    def __str__(self) -> str:
        return self.path

    @property
    def container(self) -> str:
        return CONTAINERS.get(self.name, "agent-spec")

    @property
    def path(self) -> str:
        """The storage name: {container}/{task_id}/{name}."""
        return f"{self.container}/{self.task.task_id}/{self.name}"

    @classmethod
    def latest_of(cls, task_pk: int, names: tuple[str, ...]) -> dict[str, str]:
        """The newest content of each named document the task has, in one
        query (every step reads its phase's documents; a document is stored
        again only when a phase is redone, so older versions are few)."""
        if not names:
            return {}
        rows = cls.objects.contents_of(task_pk, *names)
        documents: dict[str, str] = {}
        for name, content in rows:
            documents.setdefault(name, content)
        return {name: documents[name] for name in names if name in documents}

    @classmethod
    def store_all(cls, task, documents: dict[str, str]) -> list[str]:
        """Save each of `documents` (name: content) as a version of `task`'s
        document in one INSERT; content stored before is left as it is (the
        same content is the same row). Returns the documents' storage paths."""
        rows = [
            cls(
                task=task,
                name=name,
                sha256=hashlib.sha256(content.encode()).hexdigest(),
                content=content,
            )
            for name, content in documents.items()
        ]
        if rows:
            cls.objects.bulk_create(rows, ignore_conflicts=True)
        return [row.path for row in rows]
