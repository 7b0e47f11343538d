"""Worker entry points for fan-outs. Jobs take ids and re-read their rows."""

from __future__ import annotations

import logging
from datetime import datetime

from django.utils import timezone

from codex.children.models import FanOut
from codex.core.models import LeaseUnavailable, VersionConflict

logger = logging.getLogger(__name__)


def close_expired_windows(now: datetime | None = None) -> int:
    """Scheduled: time out every fan-out whose completion window closed, and
    finish by the rules every analysis past its 8 minutes (spec 001 "Timing").
    Safe to run twice or concurrently: `close_window` re-checks under the row
    lock. Returns how many fan-outs it moved on.
    """
    now = now or timezone.now()
    moved = 0
    for pk in FanOut.objects.due(now).values_list("pk", flat=True):
        fan_out = FanOut.objects.get(pk=pk)
        try:
            moved += fan_out.close_window(now, by="scheduler:close_expired_windows")
        except (LeaseUnavailable, VersionConflict) as exc:
            logger.info("close_expired_windows: %s busy (%s); next run", fan_out, exc)
    return moved
