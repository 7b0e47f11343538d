"""Agent instances: one agent at work, in its worktree and branch
(docs/domain/fleet.md#agent-instance)."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator
from django.db import IntegrityError, models, transaction
from django.db.models import Count, Max, Q
from django.db.models.functions import Coalesce
from django.utils import timezone
from django_fsm import FSMField, transition

from codex.core.logged_state import LoggedStateModel, positive
from codex.core.models import VersionedQuerySet
from codex.events.models import Event, EventKind
from codex.fleet.models import guards
from codex.fleet.models.choices import (
    InstanceStatus,
    InstanceType,
    RelationshipType,
    ReviewLoopStatus,
)

# "work-123-a1", "review-123-a1", "planning-a1" (docs/domain/fleet.md#instance-ids); a
# task with no GitHub issue (the web form, the API) has "work-a1", "review-a1".
INSTANCE_ID_PATTERN = (
    r"^(?:(?:work|review)-(?:[1-9][0-9]*-)?a[1-9][0-9]*|planning-a[1-9][0-9]*)$"
)
_ISSUE_ID = re.compile(r"^(work|review)-(?:([1-9][0-9]*)-)?a([1-9][0-9]*)$")
_PLANNING_ID = re.compile(r"^planning-a([1-9][0-9]*)$")
ID_PREFIX = {
    InstanceType.CODING: "work",
    InstanceType.REVIEW: "review",
    InstanceType.PLANNING: "planning",
}
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


def new_instance_id(type: str, issue_number: int | None, agent_number: int) -> str:
    """The instance id (docs/domain/fleet.md#instance-ids): work-<issue>-a<n>,
    review-<issue>-a<n>,
    planning-a<n>. Work without a GitHub issue (a task from the web form or the
    API) is work-a<n> / review-a<n>, numbered per repository like planning-a<n>.
    Raises ValueError when the parts cannot form one."""
    if agent_number < 1:
        raise ValueError("agent_number starts at 1")
    if type == InstanceType.PLANNING:
        return f"planning-a{agent_number}"
    if type not in (InstanceType.CODING, InstanceType.REVIEW):
        raise ValueError(f"unknown instance type {type!r}")
    if issue_number is None:
        return f"{ID_PREFIX[type]}-a{agent_number}"
    if issue_number < 1:
        raise ValueError(f"issue_number must be positive, not {issue_number}")
    return f"{ID_PREFIX[type]}-{issue_number}-a{agent_number}"


def parse_instance_id(instance_id: str) -> tuple[str, int | None, int]:
    """(type, issue_number, agent_number) of an instance id; ValueError if none."""
    if match := _ISSUE_ID.match(instance_id):
        prefix, issue, agent = match.groups()
        type_ = InstanceType.CODING if prefix == "work" else InstanceType.REVIEW
        return type_, int(issue) if issue else None, int(agent)
    if match := _PLANNING_ID.match(instance_id):
        return InstanceType.PLANNING, None, int(match.group(1))
    raise ValueError(f"{instance_id!r} is not an instance id")


class AgentInstanceQuerySet(VersionedQuerySet):
    protected_update_fields = frozenset({"status", "instance_id", "type"})

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
        reviews = Q(
            child_relationships__relationship_type=RelationshipType.SPAWNED_REVIEW
        )
        highest = Coalesce(
            Max("child_relationships__review_iteration", filter=reviews), 0
        )
        return self.annotate(
            total_reviews=Count("child_relationships", filter=reviews),
            highest_review_iteration=highest,
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
            taken = self.filter(
                repository=repository, type=type, issue_number=issue_number
            ).aggregate(highest=Max("agent_number"))["highest"]
            agent_number = (taken or 0) + 1
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
            try:
                with transaction.atomic():
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
        worked (the same task, else the same issue) is that one's fork: spec
        004's `created_fork` relationship, from the newest earlier one."""
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
            ._base_manager.select_for_update()
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


class AgentInstance(LoggedStateModel):
    """One agent at work (docs/domain/fleet.md#agent-instance): a coding, review
    or planning agent in its own worktree and branch, identified as work-123-a1,
    review-123-a1 or
    planning-a1 (unique within a repository; several coding agents on one issue
    are -a1, -a2, ...).

    Status (docs/domain/fleet.md#instance-status), each transition logged as an
    event::

        started ──request_review──▶ waiting_review ──request_review──▶ (again)
        started | waiting_review ──create_pr──▶ pr_created
        pr_created ──merged──▶ pr_merged
        pr_created ──closed──▶ pr_closed
        any but terminated ──terminate──▶ terminated

    request_review is for coding agents only and only while fewer than the
    configured `review.max_iterations` reviews were spawned. Heartbeats and
    activity stamps are not state: they do not bump `version`.
    """

    instance_id = models.CharField(
        max_length=40,
        editable=False,
        validators=[
            RegexValidator(
                INSTANCE_ID_PATTERN,
                "Not an instance id (work-123-a1, review-123-a1, planning-a1).",
            )
        ],
    )
    type = models.CharField(max_length=10, choices=InstanceType.choices)
    status = FSMField(
        max_length=20,
        choices=InstanceStatus.choices,
        default=InstanceStatus.STARTED,
        protected=True,
    )
    repository = models.ForeignKey(
        "repositories.Repository", on_delete=models.PROTECT, related_name="instances"
    )
    task = models.ForeignKey(
        "tasks.Task",
        on_delete=models.PROTECT,
        related_name="instances",
        null=True,
        blank=True,
    )
    parent = models.ForeignKey(
        "self",
        on_delete=models.PROTECT,
        related_name="children",
        null=True,
        blank=True,
        help_text="The coding instance a review instance reviews.",
    )

    # Git and worktree.
    worktree_path = models.CharField(max_length=500)
    branch_name = models.CharField(max_length=200)
    base_branch = models.CharField(max_length=200, blank=True)

    # The process running the agent.
    session_name = models.CharField(
        max_length=200, blank=True, help_text="Terminal or worker session name."
    )
    process_id = models.PositiveIntegerField(null=True, blank=True)
    process_host = models.CharField(max_length=200, blank=True)

    # GitHub.
    issue_number = models.PositiveIntegerField(null=True, blank=True)
    pr_number = models.PositiveIntegerField(null=True, blank=True)
    pr_url = models.CharField(max_length=500, blank=True)

    system_prompt = models.TextField(blank=True)
    role = models.CharField(
        max_length=20,
        blank=True,
        help_text="The spec 003 role whose phase runs this instance carries "
        "(triage, analyst, writer, build, reviewer); empty for instances started "
        "outside the phase runner.",
    )
    agent_number = models.PositiveSmallIntegerField(default=1)

    created_at = models.DateTimeField(default=timezone.now, editable=False)
    started_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    last_activity = models.DateTimeField(default=timezone.now)
    heartbeat_at = models.DateTimeField(null=True, blank=True)

    objects = AgentInstanceQuerySet.as_manager()

    event_kind = EventKind.INSTANCE

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            # The console lists instances by type and status, by issue and
            # newest first; per repository where ids are.
            models.Index(fields=["type", "status"], name="instance_type_status"),
            models.Index(fields=["repository", "issue_number"], name="instance_issue"),
            models.Index(fields=["-created_at", "-id"], name="instance_created"),
            models.Index(fields=["task", "role"], name="instance_task_role"),
            # The reaper, the review-limit check and the dashboard ask only
            # for live instances: a partial index keeps those scans the size
            # of the live work, not of every instance ever run.
            models.Index(
                fields=["heartbeat_at", "last_activity"],
                condition=~Q(status="terminated"),
                name="instance_live",
            ),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["repository", "instance_id"], name="instance_id_unique"
            ),
            models.CheckConstraint(
                condition=Q(type=InstanceType.CODING, instance_id__startswith="work-")
                | Q(type=InstanceType.REVIEW, instance_id__startswith="review-")
                | Q(type=InstanceType.PLANNING, instance_id__startswith="planning-"),
                name="instance_id_matches_type",
            ),
            models.CheckConstraint(
                condition=positive("agent_number"), name="instance_agent_number_gte_1"
            ),
            # docs/domain/fleet.md#instance-status: the database CHECKs type
            # and status too, so a raw UPDATE cannot set a status the state
            # machine does not know.
            models.CheckConstraint(
                condition=Q(type__in=InstanceType.values), name="instance_type_valid"
            ),
            models.CheckConstraint(
                condition=Q(status__in=InstanceStatus.values),
                name="instance_status_valid",
            ),
        ]

    def __str__(self) -> str:
        return self.instance_id

    @property
    def event_subject(self) -> str:
        return f"instance:{self.instance_id}"

    def event_fields(self) -> dict[str, Any]:
        return {
            "task_id": self.task_id,
            "data": {"instance": self.pk, "repository": self.repository_id},
        }

    def clean(self) -> None:
        """The id must be the one its type, issue and agent number make."""
        try:
            expected = new_instance_id(self.type, self.issue_number, self.agent_number)
        except ValueError as exc:
            raise ValidationError(str(exc)) from None
        if self.instance_id != expected:
            raise ValidationError(
                {
                    "instance_id": f"{self.instance_id!r} does not match its type, "
                    f"issue and agent number (expected {expected!r})."
                }
            )

    # -- transitions (docs/domain/fleet.md#instance-status) ---------------------

    @transition(
        field=status,
        source=[InstanceStatus.STARTED, InstanceStatus.WAITING_REVIEW],
        target=InstanceStatus.WAITING_REVIEW,
        conditions=[guards.is_coding_agent, guards.review_iterations_remain],
        custom={"admin": False},
    )
    def request_review(self, *, by: str, reason: str = "review requested") -> None:
        """The coding agent called the `request_review` tool."""
        self.last_activity = timezone.now()

    @transition(
        field=status,
        source=[InstanceStatus.STARTED, InstanceStatus.WAITING_REVIEW],
        target=InstanceStatus.PR_CREATED,
        custom={"admin": False},
    )
    def create_pr(
        self,
        *,
        by: str,
        pr_number: int,
        pr_url: str = "",
        reason: str = "pull request created",
    ) -> None:
        """The agent called the `create_pr` tool."""
        self.pr_number = pr_number
        self.pr_url = pr_url
        self.last_activity = timezone.now()

    @transition(
        field=status,
        source=InstanceStatus.PR_CREATED,
        target=InstanceStatus.PR_MERGED,
        custom={"label": "Pull request merged"},
    )
    def merged(self, *, by: str, reason: str = "pull request merged") -> None:
        """GitHub (webhook or polling) reports the pull request merged."""

    @transition(
        field=status,
        source=InstanceStatus.PR_CREATED,
        target=InstanceStatus.PR_CLOSED,
        custom={"label": "Pull request closed"},
    )
    def closed(self, *, by: str, reason: str = "pull request closed") -> None:
        """GitHub reports the pull request closed without a merge."""

    @transition(
        field=status,
        source=[
            InstanceStatus.STARTED,
            InstanceStatus.WAITING_REVIEW,
            InstanceStatus.PR_CREATED,
            InstanceStatus.PR_MERGED,
            InstanceStatus.PR_CLOSED,
        ],
        target=InstanceStatus.TERMINATED,
        custom={"label": "Terminate"},
    )
    def terminate(self, *, by: str, reason: str = "terminated") -> None:
        """The agent's process and session end; the worktree may be cleaned up."""
        self.ended_at = timezone.now()

    # -- liveness (not state: no version bump, never a VersionConflict) ---------

    def attach_process(self, *, pid: int, host: str, session_name: str = "") -> None:
        """Record the process now running this instance, and when it started."""
        now = timezone.now()
        values = {
            "process_id": pid,
            "process_host": host,
            "session_name": session_name or self.session_name,
            "started_at": self.started_at or now,
            "heartbeat_at": now,
            "last_activity": now,
        }
        type(self)._base_manager.filter(pk=self.pk).update(**values)
        for name, value in values.items():
            setattr(self, name, value)

    @staticmethod
    def heartbeat_values(*, active: bool = False) -> dict[str, Any]:
        """The fields a heartbeat stamps now; `active` adds last_activity (to
        pass as a transition's `also`, so it needs no UPDATE of its own)."""
        now = timezone.now()
        return {"heartbeat_at": now, **({"last_activity": now} if active else {})}

    def beat(self, *, active: bool = False) -> None:
        """A heartbeat from the worker; `active` also stamps last_activity."""
        values = self.heartbeat_values(active=active)
        type(self)._base_manager.filter(pk=self.pk).update(**values)
        for name, value in values.items():
            setattr(self, name, value)

    def is_silent_for(self, period: timedelta) -> bool:
        """No heartbeat (or, before any, no activity) within `period`."""
        last = self.heartbeat_at or self.last_activity
        return last < timezone.now() - period

    # -- relationships and events -----------------------------------------------

    def current_review_iteration(self) -> int:
        """The highest review iteration spawned from this instance (0 if none)."""
        return (
            self.child_relationships.filter(
                relationship_type=RelationshipType.SPAWNED_REVIEW
            ).aggregate(highest=Max("review_iteration"))["highest"]
            or 0
        )

    def tool_events(self) -> models.QuerySet[Event]:
        """This instance's tool calls from the event log, oldest first."""
        from codex.fleet.tool_events import tool_events_for

        return tool_events_for(self)
