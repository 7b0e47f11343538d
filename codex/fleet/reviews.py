"""The review loop (docs/domain/fleet.md#review-loop): a coding agent asks for a
review, a review
agent is spawned and linked to it with the next review iteration; once it had
the configured `review.max_iterations`, the next review is refused
(ReviewLimitReached) and the task escalates with the reason."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from codex.fleet.limits import review_limits
from codex.fleet.models import (
    AgentInstance,
    InstanceRelationship,
    InstanceType,
    RelationshipType,
)


class ReviewLimitReached(Exception):
    """The coding instance had the reviews `review.max_iterations` allows:
    another review of it is refused (docs/domain/fleet.md#review-loop)."""

    def __init__(self, coding: AgentInstance, done: int, limit: int) -> None:
        self.coding, self.done, self.limit = coding, done, limit
        super().__init__(
            f"{coding.instance_id} was reviewed {done} time(s) and "
            f"review.max_iterations is {limit}: another review is refused. Raise "
            "review.max_iterations in the console (Configuration, at most 5) and "
            "resume, or fail the task"
        )


def refuse_past_the_limit(coding: AgentInstance) -> None:
    """Raise ReviewLimitReached when `coding` may not have another review
    (the configured limit, read now: a value saved in the console binds the
    next review)."""
    done = coding.current_review_iteration()
    limit = review_limits().max_iterations
    if done >= limit:
        raise ReviewLimitReached(coding, done, limit)


def spawn_review(
    coding: AgentInstance,
    *,
    by: str,
    worktree_path: str,
    branch_name: str,
    reason: str = "review requested",
    metadata: dict[str, Any] | None = None,
    **review_fields: Any,
) -> AgentInstance:
    """`request_review` on `coding`, a new review instance for the same issue
    (its parent is `coding`), and the spawned_review relationship with the next
    iteration, all in one transaction.

    Raises ReviewLimitReached (the configured review.max_iterations reached),
    TransitionNotAllowed (not a coding agent, wrong status) or VersionConflict
    (someone else changed `coding` meanwhile); nothing is written then.
    """
    refuse_past_the_limit(coding)
    with transaction.atomic():
        iteration = coding.current_review_iteration() + 1
        coding.perform("request_review", by=by, reason=reason)
        review = AgentInstance.objects.start(
            type=InstanceType.REVIEW,
            repository=coding.repository,
            issue_number=coding.issue_number,
            task=coding.task,
            parent=coding,
            worktree_path=worktree_path,
            branch_name=branch_name,
            base_branch=review_fields.pop("base_branch", coding.branch_name),
            by=by,
            **review_fields,
        )
        InstanceRelationship.objects.create(
            parent=coding,
            child=review,
            relationship_type=RelationshipType.SPAWNED_REVIEW,
            review_iteration=iteration,
            metadata=metadata or {},
        )
    return review


APPROVED = "approve"
REQUESTED_CHANGES = "request_changes"
# A failed review whose work was abandoned for it: no longer counted.
ABANDONED = "abandoned"


def record_review_verdict(review: AgentInstance, *, approved: bool) -> None:
    """Note on the spawned_review relationship of `review` what the review
    concluded ("verdict": approve or request_changes), so the reviews that
    failed can be counted against review.auto_abandon_after."""
    relationship = InstanceRelationship.objects.filter(
        child=review, relationship_type=RelationshipType.SPAWNED_REVIEW
    ).first()
    if relationship is None:
        return
    relationship.metadata = {
        **relationship.metadata,
        "verdict": APPROVED if approved else REQUESTED_CHANGES,
    }
    relationship.save(update_fields=["metadata"])


def failed_reviews(coding: AgentInstance) -> int:
    """Reviews that requested changes of the work `coding` shares with its
    forks: every coding instance of its task (else of its issue)."""
    scope = AgentInstance.objects.filter(type=InstanceType.CODING)
    if coding.task_id is not None:
        scope = scope.filter(task_id=coding.task_id)
    elif coding.issue_number is not None:
        scope = scope.filter(
            repository_id=coding.repository_id, issue_number=coding.issue_number
        )
    else:
        scope = scope.filter(pk=coding.pk)
    return InstanceRelationship.objects.filter(
        parent__in=scope,
        relationship_type=RelationshipType.SPAWNED_REVIEW,
        metadata__verdict=REQUESTED_CHANGES,
    ).count()
