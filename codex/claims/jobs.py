"""Worker entry points for claims."""

from __future__ import annotations

from codex.claims.models import IssueClaim


def expire_stale_claims() -> int:
    """Scheduled: return claims past their TTL to unclaimed (DESIGN "expire stale
    claims"). Safe to run twice at once: a claim changed meanwhile is skipped."""
    return IssueClaim.objects.expire_stale()
