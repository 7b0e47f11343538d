"""Worker entry points of the fleet: enforcing the configured review limits."""

from __future__ import annotations

from datetime import timedelta

from django.db.models import Count, Q
from django.utils import timezone

from codex.core.store import VersionConflict
from codex.fleet.hooks import abandoned_work
from codex.fleet.limits import review_limits
from codex.fleet.models import AgentInstance, InstanceStatus, InstanceType

RUNNING_STATUSES = [
    status for status in InstanceStatus.values if status != InstanceStatus.TERMINATED
]

ACTOR = "job:enforce_review_limits"


def enforce_review_limits() -> dict[str, list[str]]:
    """Terminate review instances running longer than `review.timeout_hours`
    and the work abandoned at `review.auto_abandon_after`
    (docs/domain/fleet.md#review-loop): its failed reviews over a task's
    coding instances, or a coding instance's own review iterations. Safe to
    run twice: terminated ones are skipped, and an instance changed meanwhile
    is left for the next run.

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
    # Failed reviews first: abandoning for them also escalates the task and
    # settles the reviews; the iteration rule then finds those instances gone.
    done: dict[str, list[str]] = {
        "timed_out": [],
        "abandoned": abandon_failed_work(limits.auto_abandon_after),
    }
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


def over_the_limit(limit: int) -> list[tuple[AgentInstance, int]]:
    """The running coding instances whose work has at least `limit` failed
    reviews (what codex.fleet.reviews.failed_reviews counts: over the task's
    coding instances, else the issue's, else the instance's own), each with
    its count.

    The counts are grouped from the failed reviews themselves, a few
    statements however many instances are running: asking each running
    instance in turn cost a query apiece, and one correlated count per
    instance made a plan costly enough for PostgreSQL to compile it (JIT,
    about 0.1 s a run)."""
    from codex.fleet.models import InstanceRelationship, RelationshipType
    from codex.fleet.reviews import REQUESTED_CHANGES

    running = AgentInstance.objects.running().filter(type=InstanceType.CODING)
    failed = InstanceRelationship.objects.filter(
        relationship_type=RelationshipType.SPAWNED_REVIEW,
        metadata__verdict=REQUESTED_CHANGES,
        parent__type=InstanceType.CODING,
    ).order_by()
    found: list[tuple[AgentInstance, int]] = []
    by_task = dict(
        failed.filter(parent__task_id__in=running.exclude(task=None).values("task_id"))
        .values_list("parent__task_id")
        .annotate(n=Count("pk"))
        .filter(n__gte=limit)
    )
    for coding in running.filter(task_id__in=by_task).order_by("pk"):
        found.append((coding, by_task[coding.task_id]))
    issues = set(
        running.filter(task=None)
        .exclude(issue_number=None)
        .values_list("repository_id", "issue_number")
    )
    if issues:
        by_issue = {
            (repository, issue): n
            for repository, issue, n in failed.filter(
                parent__issue_number__in={issue for _, issue in issues}
            )
            .values_list("parent__repository_id", "parent__issue_number")
            .annotate(n=Count("pk"))
            if (repository, issue) in issues and n >= limit
        }
        for coding in running.filter(task=None).exclude(issue_number=None):
            n = by_issue.get((coding.repository_id, coding.issue_number), 0)
            if n:
                found.append((coding, n))
    by_self = dict(
        failed.filter(
            parent__in=running.filter(task=None, issue_number=None).values("pk")
        )
        .values_list("parent_id")
        .annotate(n=Count("pk"))
        .filter(n__gte=limit)
    )
    for coding in running.filter(pk__in=by_self):
        found.append((coding, by_self[coding.pk]))
    return found


def abandon_failed_work(limit: int) -> list[str]:
    """review.auto_abandon_after (docs/domain/fleet.md#review-loop), counted
    over the work its coding instances share (one task, else one issue: a fork
    starts where its parent's reviews left off, so the limit stays reachable
    while each instance is capped at review.max_iterations). The coding
    instances still running are terminated and their task, when in progress,
    escalates for a person to decide. Returns the instance ids terminated."""
    terminated: list[str] = []
    seen: set[tuple] = set()
    for coding, failed in over_the_limit(limit):
        scope = (coding.task_id, coding.repository_id, coding.issue_number)
        if scope in seen:
            continue
        seen.add(scope)
        reason = f"{failed} reviews requested changes (limit {limit}): abandoned"
        siblings = _work_of(coding).filter(status__in=RUNNING_STATUSES)
        for instance in siblings:
            try:
                instance.perform("terminate", by=ACTOR, reason=reason)
            except VersionConflict:
                continue
            terminated.append(instance.instance_id)
        _settle_failed_reviews(coding)
        if coding.task_id is not None:
            abandoned_work(coding.task_id, reason, by=ACTOR)
    return terminated


def _work_of(coding: AgentInstance):
    """The coding instances whose work `coding` shares: its task's, else its
    issue's, else itself."""
    scope = AgentInstance.objects.filter(type=InstanceType.CODING)
    if coding.task_id is not None:
        return scope.filter(task_id=coding.task_id)
    if coding.issue_number is not None:
        return scope.filter(
            repository_id=coding.repository_id, issue_number=coding.issue_number
        )
    return scope.filter(pk=coding.pk)


def _settle_failed_reviews(coding: AgentInstance) -> None:
    """The failed reviews that led to an abandonment are settled by it: their
    verdict becomes "abandoned" (the original kept as "was"), so a person who
    resumes the task gives its next fork a fresh count instead of an instant
    second abandonment."""
    from codex.fleet.models import InstanceRelationship, RelationshipType
    from codex.fleet.reviews import ABANDONED, REQUESTED_CHANGES

    settled = timezone.now().isoformat()
    for link in InstanceRelationship.objects.filter(
        parent__in=_work_of(coding),
        relationship_type=RelationshipType.SPAWNED_REVIEW,
        metadata__verdict=REQUESTED_CHANGES,
    ):
        link.metadata = {
            **link.metadata,
            "verdict": ABANDONED,
            "was": REQUESTED_CHANGES,
            "abandoned_at": settled,
        }
        link.save(update_fields=["metadata"])
