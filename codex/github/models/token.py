"""The cache of GitHub's token (docs/domain/configuration.md#forge-cache).

The token is a secret encrypted with the same keys as secret settings (and
re-encrypted by `rotate_secrets`); deleting the row only costs a refetch.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from django.db import models
from django.db.models import F
from django.utils import timezone

from codex.configuration import crypto
from codex.core.machine import machine_name
from codex.core.store import VersionedLeasedModel

# A cached token lives at most an hour (docs/domain/configuration.md#forge-cache).
TOKEN_LIFETIME = timedelta(hours=1)
# A token with less than this left is refreshed before use, so that a call
# started with it does not fail half way through.
REFRESH_MARGIN = timedelta(minutes=5)


def _default_holder() -> str:
    return f"token-refresh:{machine_name()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class GitHubToken(VersionedLeasedModel):
    """The cached GitHub token (docs/domain/configuration.md#forge-cache), one
    per name (e.g. "default" or "installation:1234").

    The token is Fernet-encrypted at rest and lives at most one hour. Replacing
    it requires the lease (docs/domain/concurrency.md#leases), so when many
    workers find it stale, one fetches and the others wait for the lease and
    then use the new token.
    """

    name = models.CharField(max_length=200, unique=True, default="default")
    token_encrypted = models.TextField(blank=True, editable=False)
    expires_at = models.DateTimeField(null=True, blank=True, editable=False)
    refreshed_at = models.DateTimeField(null=True, blank=True, editable=False)

    lease_guarded_fields = ("token_encrypted", "expires_at")

    class Meta:
        # The table made by the configuration app, where the model began.
        db_table = "configuration_githubtoken"
        verbose_name = "GitHub token (cached)"
        verbose_name_plural = "GitHub tokens (cached)"
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @property
    def token(self) -> str:
        """The token in clear text ("" when none is cached)."""
        return crypto.decrypt(self.token_encrypted) if self.token_encrypted else ""

    @property
    def masked_token(self) -> str:
        """ "••••" and at most the token's last four characters."""
        try:
            return crypto.mask(self.token)
        except crypto.SecretUnreadable:
            return f"{crypto.MASK} (cannot be decrypted with the current keys)"

    def is_fresh(self, now: datetime | None = None) -> bool:
        """Whether the token has more than REFRESH_MARGIN (5 minutes) left."""
        now = now or timezone.now()
        return bool(
            self.token_encrypted
            and self.expires_at
            and self.expires_at - now > REFRESH_MARGIN
        )

    def store(self, token: str, expires_at: datetime | None) -> None:
        """Put a new token in place (saved by the caller, who holds the lease).

        The expiry is capped at one hour from now: the lifespan of the
        cache, also for tokens (personal ones) that never expire.
        """
        if not token:
            raise ValueError("fetch returned an empty token")
        if expires_at is not None and timezone.is_naive(expires_at):
            raise ValueError("fetch must return an aware expiry datetime")
        now = timezone.now()
        limit = now + TOKEN_LIFETIME
        self.token_encrypted = crypto.encrypt(token)
        self.expires_at = min(expires_at, limit) if expires_at else limit
        self.refreshed_at = now

    @classmethod
    def get_or_refresh(
        cls,
        fetch: Callable[[], tuple[str, datetime | None]],
        *,
        name: str = "default",
        holder: str | None = None,
        **acquire_options: Any,
    ) -> str:
        """The cached token while more than 5 minutes remain; otherwise a new one
        from `fetch()` (token, expiry), fetched under the lease.

        A caller that finds someone else refreshing waits for the lease
        (CODEX_LEASE_RETRY_ATTEMPTS × CODEX_LEASE_RETRY_BACKOFF_SECONDS, or
        `acquire_options` for acquire_lease) and then returns the token that
        caller stored, without fetching. Raises LeaseUnavailable when the lease
        never frees up.
        """
        cached, _ = cls.objects.get_or_create(name=name)
        if cached.is_fresh():
            return cached.token
        holder = holder or _default_holder()
        cached.acquire_lease(holder, **acquire_options)
        try:
            # Whoever held the lease before us may have just stored a token.
            cached.refresh_from_db()
            if cached.is_fresh():
                return cached.token
            token, expires_at = fetch()
            cached.store(token, expires_at)
            cached.save(release_lease=True)
            return token
        finally:
            if cached.held_lease == holder:
                cached.release_lease()

    @classmethod
    def reencrypt_all(cls) -> int:
        """Re-encrypt every cached token with the current key; returns how many.

        The UPDATE is conditional on the old ciphertext, so a refresh that wrote
        a new token meanwhile is not overwritten.
        """
        count = 0
        rows = cls.objects.exclude(token_encrypted="").values_list(
            "pk", "token_encrypted"
        )
        for pk, old in rows:
            new = crypto.rotate(old)
            count += cls.objects.filter(pk=pk, token_encrypted=old).update(
                token_encrypted=new, version=F("version") + 1
            )
        return count
