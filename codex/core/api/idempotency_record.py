"""The stored first answer to a POST sent with an Idempotency-Key: the model
behind codex.core.api.idempotency (docs/domain/concurrency.md#idempotency-key).

Its table keeps the name it was created with, `accounts_idempotencyrecord`.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone


class IdempotencyRecord(models.Model):
    """The first answer to a POST sent with an Idempotency-Key
    (docs/domain/concurrency.md#idempotency-key).

    One per (user, key): a retry of the same request (`request_hash` of method,
    path and body) gets `response_status` and `response_body` again instead of
    acting twice; another request under the same key is refused. Records older
    than CODEX_IDEMPOTENCY_TTL_HOURS (24) no longer count and are pruned by
    codex.core.api.idempotency.prune_idempotency_records.
    """

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+"
    )
    key = models.CharField(max_length=200)
    request_hash = models.CharField(max_length=64)
    method = models.CharField(max_length=10)
    path = models.CharField(max_length=500)
    response_status = models.PositiveSmallIntegerField()
    response_body = models.JSONField(null=True, blank=True)
    response_location = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        app_label = "core"
        db_table = "accounts_idempotencyrecord"
        constraints = [
            models.UniqueConstraint(
                fields=["user", "key"], name="idempotency_one_record_per_user_key"
            )
        ]
        indexes = [models.Index(fields=["created_at"], name="idempotency_created")]

    def __str__(self) -> str:
        return f"{self.method} {self.path} ({self.key})"
