"""Worker entry points of the fleet: enforcing the configured review limits."""

from __future__ import annotations

from datetime import timedelta

from django.db.models import Q
from django.utils import timezone

from codex.core.models import VersionConflict
from codex.fleet.limits import review_limits
from codex.fleet.models import AgentInstance, InstanceType

ACTOR = "job:enforce_review_limits"


def enforce_review_limits() -> dict[str, list[str]]:
    """Terminate review instances running longer than `review.timeout_hours`
    (spec 004: "Auto-terminate stuck reviews after 24h") and coding instances
    whose review iterations reached `review.auto_abandon_after` ("Auto-abandon
    after 5 failed reviews"). Safe to run twice: terminated ones are skipped,
    and an instance changed meanwhile is left for the next run.

    Returns the instance ids terminated, by reason.
    """
    limits = review_limits()
    cutoff = timezone.now() - timedelta(hours=limits.timeout_hours)
    running = AgentInstance.objects.running()
    stuck = running.filter(type=InstanceType.REVIEW).filter(
        Q(started_at__lt=cutoff) | Q(started_at__isnull=True, created_at__lt=cutoff)
    )
    abandoned = (
        running.filter(type=InstanceType.CODING)
        .with_review_loop_status()
        .filter(highest_review_iteration__gte=limits.auto_abandon_after)
    )
    done: dict[str, list[str]] = {"timed_out": [], "abandoned": []}
    for key, instances, reason in (
        ("timed_out", stuck, f"review running for more than {limits.timeout_hours}h"),
        (
            "abandoned",
            abandoned,
            f"{limits.auto_abandon_after} review iterations reached: abandoned",
        ),
    ):
        for instance in instances:
            try:
                instance.perform("terminate", by=ACTOR, reason=reason)
            except VersionConflict:
                continue
            done[key].append(instance.instance_id)
    return done
