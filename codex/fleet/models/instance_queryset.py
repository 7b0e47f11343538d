"""Finding agent instances and starting new ones within the parallel limit
(docs/domain/fleet.md#parallel-limit) and the review loop's bounds
(docs/domain/fleet.md#review-loop)."""

from __future__ import annotations

from contextlib import nullcontext
from typing import TYPE_CHECKING, Any

from django.db import IntegrityError, models, transaction
from django.db.models import Count, Max
from django.db.models.functions import Coalesce

from codex.core.store import VersionedQuerySet, hot_aggregate, hot_row
from codex.fleet.models.choices import (
    InstanceStatus,
    InstanceType,
    RelationshipType,
    ReviewLoopStatus,
)
from codex.fleet.models.instance_ids import new_instance_id
from codex.fleet.models.relationship import InstanceRelationship

if TYPE_CHECKING:
    from codex.fleet.models.instance import AgentInstance

# The review-loop status (docs/domain/fleet.md#review-loop): >= 3 is approaching
# the limit, >= 5 is at it.
APPROACHING_LIMIT_ITERATION = 3
AT_LIMIT_ITERATION = 5
# The review-loop tracking lists instances with 2 review cycles or more.
MULTIPLE_REVIEWS_ITERATION = 2
# At most 5 coding agents work in parallel, per task and per issue
# (docs/domain/fleet.md#parallel-limit).
MAX_PARALLEL_CODING = 5


class ParallelLimitReached(ValueError):
    """A sixth coding instance was asked for while five are not terminated."""


# How many agent numbers `start` tries before giving up (each lost race takes
# the next free one).
ALLOCATION_TRIES = 25


class AgentInstanceQuerySet(VersionedQuerySet):
    protected_update_fields = frozenset({"status", "instance_id", "type"})

    @hot_row
    def current(self, task_id: int, role: str) -> AgentInstanceQuerySet:
        """The task's instance of `role` not terminated, newest first (every
        step asks)."""
        return (
            self.running()
            .filter(task_id=task_id, role=role)
            .order_by("-created_at", "-id")[:1]
        )

    def running(self) -> AgentInstanceQuerySet:
        """The dashboard's running instances: every one not terminated.

        No status is called "running": every status but terminated is work in
        progress (docs/domain/fleet.md#instance-status), so running means "not
        terminated".
        """
        return self.exclude(status=InstanceStatus.TERMINATED)

    def with_review_loop_status(self) -> AgentInstanceQuerySet:
        """Annotate `total_reviews`, `highest_review_iteration` (0 when none) and
        `review_loop_status` from the instance's spawned_review relationships.

        The higher bound is tested first, or AT_LIMIT could never be chosen:
        >= 5 AT_LIMIT, then >= 3 APPROACHING_LIMIT, else NORMAL
        (docs/domain/fleet.md#review-loop).
        """
        # Correlated subqueries, not a join with GROUP BY: a list page then
        # reads the reviews of its own rows only, however many instances
        # there are (a GROUP BY aggregates every instance before the LIMIT).
        reviews = (
            InstanceRelationship.objects.filter(
                parent=models.OuterRef("pk"),
                relationship_type=RelationshipType.SPAWNED_REVIEW,
            )
            .order_by()
            .values("parent")
        )
        count = reviews.annotate(n=Count("*")).values("n")
        highest = reviews.annotate(m=Max("review_iteration")).values("m")
        integer = models.IntegerField()
        return self.annotate(
            total_reviews=Coalesce(models.Subquery(count, output_field=integer), 0),
            highest_review_iteration=Coalesce(
                models.Subquery(highest, output_field=integer), 0
            ),
            review_loop_status=models.Case(
                models.When(
                    highest_review_iteration__gte=AT_LIMIT_ITERATION,
                    then=models.Value(ReviewLoopStatus.AT_LIMIT),
                ),
                models.When(
                    highest_review_iteration__gte=APPROACHING_LIMIT_ITERATION,
                    then=models.Value(ReviewLoopStatus.APPROACHING_LIMIT),
                ),
                default=models.Value(ReviewLoopStatus.NORMAL),
                output_field=models.CharField(),
            ),
        )

    def review_loops(self) -> AgentInstanceQuerySet:
        """The review-loop tracking (docs/domain/fleet.md#review-loop): coding
        agents not terminated with at least 2 review cycles, the highest
        iteration first."""
        return (
            self.filter(type=InstanceType.CODING)
            .exclude(status=InstanceStatus.TERMINATED)
            .with_review_loop_status()
            .filter(highest_review_iteration__gte=MULTIPLE_REVIEWS_ITERATION)
            .order_by("-highest_review_iteration", "created_at")
        )

    def start(
        self,
        *,
        type: str,
        repository,
        worktree_path: str,
        branch_name: str,
        by: str,
        issue_number: int | None = None,
        reason: str = "instance started",
        **fields: Any,
    ) -> AgentInstance:
        """Create a started instance with the next free agent number for its
        repository, type and issue (work-123-a1, then -a2, ...), and log it.

        A coding instance is refused with ParallelLimitReached when its task,
        or its issue, already has MAX_PARALLEL_CODING coding instances not
        terminated (docs/domain/fleet.md#parallel-limit); the repository's row
        is locked while counting, so two workers cannot both take the fifth
        place.
        """
        # Planning instances (and work without an issue) share one numbering per
        # repository: with many tasks starting at once on 8 workers, 5 tries
        # ran out (a task blocked on "could not allocate a free agent number").
        for _ in range(ALLOCATION_TRIES):
            taken = self._highest_agent_number(repository, type, issue_number)
            agent_number = taken + 1
            instance = self.model(
                type=type,
                repository=repository,
                worktree_path=worktree_path,
                branch_name=branch_name,
                issue_number=issue_number,
                agent_number=agent_number,
                instance_id=new_instance_id(type, issue_number, agent_number),
                **fields,
            )
            # The database, not a racy pre-check, decides uniqueness (see except).
            # The related rows are the caller's loaded objects: checking that
            # they exist would be a query each.
            instance.full_clean(
                exclude=["status", "repository", "task", "parent"],
                validate_unique=False,
                validate_constraints=False,
            )
            # A coding instance counts its parallel limit under a lock, and a
            # caller's transaction needs a savepoint to try again; otherwise
            # the save is atomic by itself (one statement, or one_change).
            atomic = (
                type == InstanceType.CODING
                or transaction.get_connection(self.db).in_atomic_block
            )
            try:
                with transaction.atomic() if atomic else nullcontext():
                    if type == InstanceType.CODING:
                        self._check_parallel_limit(
                            repository, issue_number, fields.get("task")
                        )
                    instance.record(
                        by=by,
                        reason=reason,
                        field="status",
                        target="started",
                    )
                    instance.save()
                    if type == InstanceType.CODING:
                        self._link_fork(instance)
                return instance
            except IntegrityError:
                # Another worker took this number at the same moment; take the next.
                instance._pending_events = []
        raise IntegrityError("could not allocate a free agent number")

    def _link_fork(self, instance: AgentInstance) -> None:
        """A coding instance started where another coding instance already
        worked (the same task, else the same issue) is that one's fork: the
        `created_fork` relationship (docs/domain/fleet.md#review-loop), from
        the newest earlier one."""
        from codex.fleet.models.relationship import InstanceRelationship

        earlier = self.filter(type=InstanceType.CODING).exclude(pk=instance.pk)
        if instance.task_id is not None:
            earlier = earlier.filter(task_id=instance.task_id)
        elif instance.issue_number is not None:
            earlier = earlier.filter(
                repository=instance.repository, issue_number=instance.issue_number
            )
        else:
            return  # no shared work to fork from
        parent = earlier.order_by("-created_at", "-id").first()
        if parent is None:
            return
        InstanceRelationship.objects.create(
            parent=parent,
            child=instance,
            relationship_type=RelationshipType.CREATED_FORK,
            metadata={
                "task": instance.task.task_id if instance.task_id else None,
                "issue_number": instance.issue_number,
                "parent_status": parent.status,
            },
        )

    def _highest_agent_number(
        self, repository: Any, type: str, issue_number: int | None
    ) -> int:
        """The highest agent number taken for `repository`, `type` and
        `issue_number` (0 when none is): every phase's first step starts an
        instance."""
        keys = (repository.pk, type) + (() if issue_number is None else (issue_number,))
        (highest,) = self.model.objects.highest_agent_numbers(*keys)
        return highest or 0

    @hot_aggregate("repository_id", highest=Max("agent_number"))
    def highest_agent_numbers(
        self, repository_id: int, type: str, issue_number: int | None = None
    ) -> AgentInstanceQuerySet:
        """(the highest agent number,) of the instances of a repository, type
        and issue (none: no issue)."""
        return self.filter(
            repository_id=repository_id, type=type, issue_number=issue_number
        )

    def _check_parallel_limit(
        self, repository, issue_number: int | None, task=None
    ) -> None:
        """ParallelLimitReached when the task or the issue has its five coding
        instances already (call inside a transaction)."""
        # Serialise the count per repository (a row lock on PostgreSQL; SQLite
        # writes one at a time anyway), so two workers cannot both take the
        # fifth place of a task or an issue.
        list(
            type(repository)
            .objects.select_for_update()
            .filter(pk=repository.pk)
            .values_list("pk", flat=True)
        )
        coding = self.running().filter(type=InstanceType.CODING)
        scopes = []
        if task is not None:
            scopes.append((f"task {task}", coding.filter(task=task)))
        if issue_number is not None:
            scopes.append(
                (
                    f"issue #{issue_number}",
                    coding.filter(repository=repository, issue_number=issue_number),
                )
            )
        for name, instances in scopes:
            if instances.count() >= MAX_PARALLEL_CODING:
                raise ParallelLimitReached(
                    f"{name} already has {MAX_PARALLEL_CODING} coding instances "
                    "working; terminate one first"
                )
