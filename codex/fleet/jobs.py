"""Worker entry points of the fleet: enforcing the configured review limits."""

from __future__ import annotations

from datetime import timedelta

from django.db.models import Case, Count, OuterRef, Q, QuerySet, Subquery, When
from django.db.models.functions import Coalesce
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
    done["abandoned"] += abandon_failed_work(limits.auto_abandon_after)
    return done


def with_failed_reviews(instances: QuerySet) -> QuerySet:
    """`instances` (coding ones) annotated with `failed_reviews`: what
    codex.fleet.reviews.failed_reviews counts for each, in the same query
    (one statement however many instances are running, where asking each
    instance in turn cost a query per running coding instance)."""
    from codex.fleet.models import InstanceRelationship, RelationshipType
    from codex.fleet.reviews import REQUESTED_CHANGES

    failed = InstanceRelationship.objects.filter(
        relationship_type=RelationshipType.SPAWNED_REVIEW,
        metadata__verdict=REQUESTED_CHANGES,
        parent__type=InstanceType.CODING,
    ).order_by()

    def count(group: str, **match) -> Coalesce:
        rows = failed.filter(**match).values(group).annotate(n=Count("pk"))
        return Coalesce(Subquery(rows.values("n")[:1]), 0)

    return instances.annotate(
        failed_reviews=Case(
            When(
                task__isnull=False,
                then=count("parent__task_id", parent__task_id=OuterRef("task_id")),
            ),
            When(
                issue_number__isnull=False,
                then=count(
                    "parent__repository_id",
                    parent__repository_id=OuterRef("repository_id"),
                    parent__issue_number=OuterRef("issue_number"),
                ),
            ),
            default=count("parent_id", parent_id=OuterRef("pk")),
        )
    )


def abandon_failed_work(limit: int) -> list[str]:
    """Spec 004 "Auto-abandon after 5 failed reviews", counted over the work
    its coding instances share (one task, else one issue: a fork starts where
    its parent's reviews left off, so the limit stays reachable while each
    instance is capped at review.max_iterations). The coding instances still
    running are terminated and their task, when in progress, escalates for a
    person to decide. Returns the instance ids terminated.

    The counts come with the instances (`with_failed_reviews`): a run that
    finds nothing to abandon costs one query, not one per running instance."""
    terminated: list[str] = []
    seen: set[tuple] = set()
    over_limit = with_failed_reviews(
        AgentInstance.objects.running().filter(type=InstanceType.CODING)
    ).filter(failed_reviews__gte=limit)
    for coding in over_limit:
        scope = (coding.task_id, coding.repository_id, coding.issue_number)
        if scope in seen:
            continue
        seen.add(scope)
        failed = coding.failed_reviews
        reason = f"{failed} reviews requested changes (limit {limit}): abandoned"
        siblings = AgentInstance.objects.running().filter(type=InstanceType.CODING)
        siblings = (
            siblings.filter(task_id=coding.task_id)
            if coding.task_id is not None
            else siblings.filter(pk=coding.pk)
        )
        for instance in siblings:
            try:
                instance.perform("terminate", by=ACTOR, reason=reason)
            except VersionConflict:
                continue
            terminated.append(instance.instance_id)
        if coding.task_id is not None:
            _escalate_abandoned(coding.task_id, reason)
    return terminated


def _escalate_abandoned(task_pk: int, reason: str) -> None:
    from django_fsm import TransitionNotAllowed

    from codex.core.models import LeaseUnavailable
    from codex.tasks.models import EscalationReason, Status, Task

    task = Task.objects.filter(pk=task_pk, status=Status.IN_PROGRESS).first()
    if task is None:
        return
    try:
        task.perform(
            "escalate", by=ACTOR, reason=reason, code=EscalationReason.REVIEW_LIMIT
        )
    except (LeaseUnavailable, VersionConflict, TransitionNotAllowed):
        # A worker is in a step: its instances are gone, so its next step
        # starts a fork; the next run of this job escalates then.
        return
