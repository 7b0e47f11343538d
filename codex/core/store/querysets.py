"""The queryset of versioned models (codex.core.store.versioned.VersionedLeasedModel).

A bulk update skips the version check and the lease of every row it touches, so
it may not change the state fields a queryset lists in `protected_update_fields`
(nor `version`); what it may change still raises every row's version.
"""

from __future__ import annotations

from typing import Any

from django.db import models
from django.db.models import F
from django.utils import timezone

from codex.core.store.refusals import LeaseRequired


class VersionedQuerySet(models.QuerySet):
    """Refuses bulk updates of state fields, which would skip versions and leases."""

    protected_update_fields: frozenset[str] = frozenset()

    def update(self, **kwargs: Any) -> int:
        refused = set(kwargs) & (self.protected_update_fields | {"version"})
        if refused:
            raise LeaseRequired(
                f"bulk updates of {', '.join(sorted(refused))} bypass versions and "
                "leases; load the rows and use their transitions"
            )
        return self._update_with_version(**kwargs)

    def _update_with_version(self, **kwargs: Any) -> int:
        kwargs.setdefault("updated_at", timezone.now())
        return super().update(version=F("version") + 1, **kwargs)

    def bulk_update(self, objs, fields, batch_size=None):
        refused = set(fields) & (self.protected_update_fields | {"version"})
        if refused:
            raise LeaseRequired(
                f"bulk updates of {', '.join(sorted(refused))} bypass versions "
                "and leases"
            )
        return super().bulk_update(objs, fields, batch_size)
