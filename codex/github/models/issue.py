"""The cache of GitHub's issues (docs/domain/configuration.md#forge-cache).

A cache: GitHub is the truth, and deleting a row only costs a refetch.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from django.db import IntegrityError, models, transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.dateparse import parse_datetime


class GitHubIssueState(models.TextChoices):
    OPEN = "open", "Open"
    CLOSED = "closed", "Closed"


def _when(value: Any) -> datetime | None:
    if value is None or isinstance(value, datetime):
        return value
    return parse_datetime(str(value))


class GitHubIssueQuerySet(models.QuerySet):
    def upsert_from_api(
        self, repository, payload: Mapping[str, Any]
    ) -> GitHubIssue | None:
        """Cache an issue from a GitHub REST or webhook `issue` payload.

        Pull requests (GitHub lists them as issues, with a `pull_request` key)
        are not cached: returns None. A payload older than the cached row
        (`updated_at`) is ignored, so out-of-order webhooks and a sync racing a
        webhook cannot move the cache backwards. Safe to call concurrently.
        """
        if payload.get("pull_request"):
            return None
        number = int(payload["number"])
        updated_at = _when(payload.get("updated_at"))
        assignee = payload.get("assignee") or {}
        values = {
            "title": payload.get("title") or "",
            "body": payload.get("body") or "",
            "state": payload.get("state") or GitHubIssueState.OPEN,
            "assignee": assignee.get("login", "") if assignee else "",
            "labels": sorted(
                label["name"] if isinstance(label, Mapping) else str(label)
                for label in payload.get("labels") or []
            ),
            "created_at": _when(payload.get("created_at")),
            "updated_at": updated_at,
            "closed_at": _when(payload.get("closed_at")),
            "synced_at": timezone.now(),
        }
        rows = self.filter(repository=repository, number=number)
        not_newer = Q(updated_at__isnull=True)
        if updated_at is not None:
            not_newer |= Q(updated_at__lte=updated_at)
        for _ in range(2):
            if rows.filter(not_newer).update(**values):
                return rows.get()
            if rows.exists():
                return rows.get()  # the cached copy is newer
            try:
                with transaction.atomic():
                    return self.create(repository=repository, number=number, **values)
            except IntegrityError:
                continue  # created concurrently: update that row instead
        return rows.get()


class GitHubIssue(models.Model):
    """A cached GitHub issue (docs/domain/configuration.md#forge-cache), refreshed
    by the sync and by webhooks to save API calls.

    `created_at`, `updated_at` and `closed_at` are GitHub's timestamps;
    `synced_at` is when Codex last fetched the issue. The repository is a
    foreign key and (repository, number) is unique, so two repositories' #1 do
    not collide.
    """

    repository = models.ForeignKey(
        "repositories.Repository",
        on_delete=models.CASCADE,
        related_name="github_issues",
    )
    number = models.PositiveIntegerField()
    title = models.TextField()
    body = models.TextField(blank=True)
    state = models.CharField(max_length=10, choices=GitHubIssueState.choices)
    assignee = models.CharField(max_length=100, blank=True)
    labels = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(null=True, blank=True)
    closed_at = models.DateTimeField(null=True, blank=True)
    synced_at = models.DateTimeField(default=timezone.now)

    objects = GitHubIssueQuerySet.as_manager()

    class Meta:
        # The table made by the configuration app, where the model began.
        db_table = "configuration_githubissue"
        verbose_name = "GitHub issue (cached)"
        verbose_name_plural = "GitHub issues (cached)"
        ordering = ["repository", "-number"]
        constraints = [
            models.UniqueConstraint(
                fields=["repository", "number"], name="github_issue_unique_number"
            )
        ]
        # The sync and the console list a repository's issues by state and by
        # last update; both indexes lead with the repository because every
        # query here is about one repository.
        indexes = [
            models.Index(fields=["repository", "state"], name="github_issue_state"),
            models.Index(
                fields=["repository", "updated_at"], name="github_issue_updated"
            ),
        ]

    def __str__(self) -> str:
        return f"#{self.number} {self.title[:60]}"
