"""Which of several configured credentials of a service is in use."""

from __future__ import annotations

from django.db import models

from codex.core.store import hot_row


class ActiveCredentialQuerySet(models.QuerySet):
    @hot_row
    def of(self, source: str) -> ActiveCredentialQuerySet:
        """The row of `source`, or None (every model request's client asks;
        source is unique)."""
        return self.filter(source=source).order_by()[:1]


class ActiveCredential(models.Model):
    """The index of the credential in use for one outside service (`source`).

    The credentials themselves live in the environment (settings
    CODEX_CREDENTIALS, e.g. several GITHUB_TOKEN values); only the position is
    stored, so that every worker moves to the next credential together when
    one is rejected (docs/domain/concurrency.md#error-classification).
    """

    source = models.CharField(max_length=20, unique=True)
    index = models.PositiveSmallIntegerField(default=0)
    rotations = models.PositiveIntegerField(default=0)
    rotated_at = models.DateTimeField(null=True, blank=True)

    objects = ActiveCredentialQuerySet.as_manager()

    def __str__(self) -> str:
        return f"{self.source}: credential #{self.index + 1}"
