"""The refusals of a write to a versioned, leased row
(docs/domain/concurrency.md#versions, #leases).

Raised by VersionedLeasedModel's saves (codex.core.store.versioned), its
lease operations (codex.core.store.leases) and VersionedQuerySet
(codex.core.store.querysets). Callers import them from codex.core.store.
"""

from __future__ import annotations

from django.db import models


class VersionConflict(Exception):
    """The row changed since it was read (VERSION_MISMATCH,
    docs/domain/concurrency.md#versions)."""

    code = "version_mismatch"

    def __init__(self, obj: models.Model, expected: int) -> None:
        self.expected = expected
        super().__init__(
            f"{obj._meta.verbose_name} {obj} changed since it was read "
            f"(expected version {expected}); re-read it and try again"
        )


class LeaseUnavailable(Exception):
    """Someone else holds the lease and it has not expired."""

    code = "lease_held"

    def __init__(self, obj: models.Model, holder: str | None, expires_at) -> None:
        self.holder = holder
        self.expires_at = expires_at
        super().__init__(
            f"{obj._meta.verbose_name} {obj} is leased by {holder} until "
            f"{expires_at:%Y-%m-%d %H:%M:%S} UTC"
            if expires_at
            else f"{obj._meta.verbose_name} {obj} is leased by {holder}"
        )


class LeaseRequired(Exception):
    """A state change was saved without holding the lease."""

    code = "lease_required"


REFUSALS = (VersionConflict, LeaseUnavailable, LeaseRequired)
