"""Agent instances: one agent at work, in its worktree and branch
(docs/domain/fleet.md#agent-instance)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator
from django.db import models
from django.db.models import Q
from django.db.models.functions import Coalesce
from django.utils import timezone
from django_fsm import FSMField, transition

from codex.core.store import LoggedStateModel, positive
from codex.events.models import Event, EventKind
from codex.fleet.models import guards
from codex.fleet.models.choices import (
    InstanceStatus,
    InstanceType,
)
from codex.fleet.models.instance_ids import INSTANCE_ID_PATTERN, new_instance_id
from codex.fleet.models.instance_queryset import (
    MAX_PARALLEL_CODING,  # noqa: F401 (imported from here too)
    AgentInstanceQuerySet,
    ParallelLimitReached,  # noqa: F401
)
from codex.fleet.models.relationship import InstanceRelationship


def instance_silent_since() -> Coalesce:
    """Since when an instance has been silent: its last heartbeat, or its last
    activity if it never beat (AgentInstance.is_silent_for's rule)."""
    return Coalesce("heartbeat_at", "last_activity")


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
        help_text="The role whose phase runs this instance carries (triage, "
        "analyst, writer, build, reviewer: docs/domain/tasks.md#roles); empty "
        "for instances started outside the phase runner.",
    )
    agent_number = models.PositiveSmallIntegerField(default=1)

    created_at = models.DateTimeField(default=timezone.now, editable=False)
    started_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    last_activity = models.DateTimeField(default=timezone.now)
    heartbeat_at = models.DateTimeField(null=True, blank=True)

    objects = AgentInstanceQuerySet.as_manager()

    event_kind = EventKind.INSTANCE
    event_id_key = "instance"  # event_fields: its id appears there only

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
            # of the live work, not of every instance ever run; keyed by the
            # reaper's expression, its look for silent ones finds just those.
            models.Index(
                instance_silent_since(),
                condition=~Q(status="terminated"),
                name="instance_live_silent",
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
            "data": {self.event_id_key: self.pk, "repository": self.repository_id},
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

    @staticmethod
    def process_values(*, pid: int, host: str, session_name: str = "") -> dict:
        """The fields attach_process writes, for a new instance: give them to
        AgentInstance.objects.start and the process is attached in the INSERT."""
        now = timezone.now()
        return {
            "process_id": pid,
            "process_host": host,
            "session_name": session_name,
            "started_at": now,
            "heartbeat_at": now,
            "last_activity": now,
        }

    def attach_process(self, *, pid: int, host: str, session_name: str = "") -> None:
        """Record the process now running this instance, and when it started."""
        values = self.process_values(
            pid=pid, host=host, session_name=session_name or self.session_name
        )
        values["started_at"] = self.started_at or values["started_at"]
        self.write_unversioned(**values)

    @staticmethod
    def heartbeat_values(*, active: bool = False) -> dict[str, Any]:
        """The fields a heartbeat stamps now; `active` adds last_activity (to
        pass as a transition's `also`, so it needs no UPDATE of its own)."""
        now = timezone.now()
        return {"heartbeat_at": now, **({"last_activity": now} if active else {})}

    def beat(self, *, active: bool = False) -> None:
        """A heartbeat from the worker; `active` also stamps last_activity."""
        values = self.heartbeat_values(active=active)
        self.write_unversioned(**values)

    def is_silent_for(self, period: timedelta) -> bool:
        """No heartbeat (or, before any, no activity) within `period`."""
        last = self.heartbeat_at or self.last_activity
        return last < timezone.now() - period

    # -- relationships and events -----------------------------------------------

    def current_review_iteration(self) -> int:
        """The highest review iteration spawned from this instance (0 if none)."""
        (highest,) = InstanceRelationship.objects.review_iterations_of(self.pk)
        return highest or 0

    def tool_events(self) -> models.QuerySet[Event]:
        """This instance's tool calls from the event log, oldest first."""
        from codex.fleet.tool_events import tool_events_for

        return tool_events_for(self)
