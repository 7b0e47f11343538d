"""The task envelope (docs/domain/tasks.md#task-envelope): identity, request,
state, progress, loops."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxLengthValidator, RegexValidator
from django.db import DEFAULT_DB_ALIAS, models
from django.utils import timezone
from django_fsm import FSMField, TransitionNotAllowed

from codex.core.store import VersionedLeasedModel
from codex.core.workers import enqueue_on_commit, job_row
from codex.events.models import Event, EventKind
from codex.tasks.models import gate_guards, guards
from codex.tasks.models.choices import (
    RECOVERABLE_STATUSES,
    TERMINAL_STATUSES,
    Agent,
    CreatedBy,
    Phase,
    PhaseStatus,
    Priority,
    Status,
)
from codex.tasks.models.gate_transitions import GateTransitions
from codex.tasks.models.phase_transitions import PhaseTransitions
from codex.tasks.models.queryset import ADVANCE_JOB, IMMUTABLE_FIELDS, TaskQuerySet
from codex.tasks.models.reports import ReviewReport
from codex.tasks.models.status_transitions import StatusTransitions

TASK_ID_PATTERN = r"^FEAT-\d{8}-[a-z0-9]{6}$"
TITLE_MAX_LENGTH = 200
ERRORS_KEPT = 50

PHASE_AGENT = {
    Phase.INTAKE: Agent.PM,
    Phase.PLANNING: Agent.DEV,
    Phase.IMPLEMENTATION: Agent.DEV,
    Phase.VERIFICATION: Agent.QA,
    Phase.REVIEW: Agent.REVIEWER,
    Phase.RELEASE: Agent.DEV,
}


class ImmutableFieldError(ValidationError):
    """Raised when code tries to change a task's request or identity."""


class IdempotencyMismatch(Exception):
    """The idempotency key was used before for a different request."""

    def __init__(self, task: Task) -> None:
        self.task = task
        super().__init__(
            f"this Idempotency-Key was already used for task {task.task_id} "
            "with a different request"
        )


# Phase.values builds its list at every call; every new task asks.
PHASES = tuple(Phase.values)


def initial_phase_progress() -> dict[str, dict[str, Any]]:
    return {
        phase: {"status": PhaseStatus.PENDING, "agent_invocations": 0}
        for phase in PHASES
    }


class Task(
    StatusTransitions,
    GateTransitions,
    PhaseTransitions,
    VersionedLeasedModel,
):
    """The task envelope (docs/domain/tasks.md#task-envelope): one feature
    request's whole life.

    The request (title, description, priority, acceptance criteria) and identity
    never change after creation. `status` and `phase` change only through the
    transitions below, while holding the lease; each is written to the event log.
    People and jobs change it through `perform`; a person pauses, cancels or
    answers it through the calls beside the status transitions
    (`request_control`, `resolve_escalation`) and the gates' (`answer_gate`).

    Status (docs/domain/tasks.md#task-status): exactly eight statuses; every
    non-terminal one may also be cancelled::

        pending ──start──▶ in_progress ──complete──▶ completed
                            │  ▲  ▲  ▲
              block ◀───────┘  │  │  └── resolve ── escalated ◀── escalate
              blocked ─unblock─┘  └── resume ── paused ◀── pause
        fail: in_progress | blocked | escalated ──▶ failed
        cancel: pending | in_progress | blocked | escalated | paused ──▶ cancelled

    Gates (codex.tasks.models.gate_transitions, docs/gates.md): a task waiting
    for a person's approval, merge or raised cap is escalated with the gate's
    own escalation::

        in_progress ─await_approval─▶ escalated ─approve─▶ in_progress
        escalated ─request_changes─▶ in_progress  (plan, cycles < 3)
        escalated ─notice_merge─▶ in_progress     (a person merged; complete follows)
        escalated ─lift_cap─▶ in_progress         (spend under the caps)

    Phase (docs/domain/tasks.md#task-phase; all only while in_progress)::

        intake ─begin_planning─▶ planning ─begin_implementation─▶ implementation
        (with plan approval, planning waits at a gate: begin_implementation
        happens with the approval)
        implementation ─begin_verification─▶ verification ─begin_review─▶ review
        verification ─return_from_verification─▶ implementation  (cycles < 3)
        review ─begin_release─▶ release
        review ─return_from_review─▶ implementation              (cycles < 2)

    Escalation (intake needing clarification, verification past 3 cycles, review
    past 2) changes the status to `escalated`; the phase stays where it was.
    """

    task_id = models.CharField(
        max_length=22,
        unique=True,
        editable=False,
        validators=[
            RegexValidator(TASK_ID_PATTERN, "Not a task id (FEAT-YYYYMMDD-xxxxxx).")
        ],
    )
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    created_by = models.CharField(max_length=10, choices=CreatedBy.choices)
    # The person or API client who asked for it: an integrator sees only the
    # tasks it requested (codex.accounts.permissions.visible_tasks).
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        editable=False,
        related_name="requested_tasks",
    )
    # No index of its own: task_repo_status (repository, status) leads with it.
    repository = models.ForeignKey(
        "repositories.Repository",
        on_delete=models.PROTECT,
        related_name="tasks",
        db_index=False,
    )
    idempotency_key = models.CharField(
        max_length=300, null=True, blank=True, unique=True, editable=False
    )
    request_fingerprint = models.CharField(max_length=64, editable=False)
    issue_number = models.PositiveIntegerField(
        null=True, blank=True, help_text="The GitHub issue this task came from, if any."
    )

    # Request: immutable after creation.
    title = models.CharField(
        max_length=TITLE_MAX_LENGTH, validators=[MaxLengthValidator(TITLE_MAX_LENGTH)]
    )
    description = models.TextField(blank=True)
    priority = models.CharField(
        max_length=10, choices=Priority.choices, default=Priority.MEDIUM
    )
    acceptance_criteria = models.TextField(blank=True)

    # Current state.
    status = FSMField(
        max_length=20, choices=Status.choices, default=Status.PENDING, protected=True
    )
    phase = FSMField(
        max_length=20, choices=Phase.choices, default=Phase.INTAKE, protected=True
    )
    current_agent = models.CharField(
        max_length=10, choices=Agent.choices, default=Agent.NONE
    )
    phase_entered_at = models.DateTimeField(default=timezone.now)
    phase_progress = models.JSONField(default=initial_phase_progress)

    # Intake and implementation progress (the phase guards read these).
    needs_clarification = models.BooleanField(default=False)
    current_task = models.PositiveIntegerField(default=0)
    total_tasks = models.PositiveIntegerField(default=0)
    branch = models.CharField(max_length=200, blank=True)
    pr_url = models.CharField(max_length=500, blank=True)
    commits = models.JSONField(default=list, blank=True)
    ci_passing = models.BooleanField(null=True, blank=True)
    pr_merged = models.BooleanField(default=False)

    # Feedback loops (docs/domain/tasks.md#feedback-loops).
    verification_cycles = models.PositiveSmallIntegerField(default=0)
    verification_max_cycles = models.PositiveSmallIntegerField(
        default=guards.default_verification_max_cycles
    )
    review_cycles = models.PositiveSmallIntegerField(default=0)
    review_max_cycles = models.PositiveSmallIntegerField(
        default=guards.default_review_max_cycles
    )
    feedback_history = models.JSONField(default=guards.empty_feedback_history)
    plan_cycles = models.PositiveSmallIntegerField(default=0)
    plan_max_cycles = models.PositiveSmallIntegerField(
        default=gate_guards.default_plan_max_cycles
    )

    # Gates (docs/gates.md): asked for by the request, or by the repository.
    plan_approval_required = models.BooleanField(default=False)
    # The forge login of who asked (a GitHub issue's author): never the
    # only approver of its own request.
    requester_login = models.CharField(max_length=100, blank=True)

    # Errors and retries.
    errors = models.JSONField(default=list, blank=True)
    retry_count = models.PositiveSmallIntegerField(default=0)
    blocked_reason = models.TextField(blank=True)
    blocked_until = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    objects = TaskQuerySet.as_manager()

    lease_guarded_fields = ("status", "phase")
    write_changed_fields_only = True

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["-created_at", "-id"], name="task_created"),
            models.Index(fields=["repository", "status"], name="task_repo_status"),
            models.Index(fields=["priority", "status"], name="task_priority_status"),
            # Stuck-task recovery's look: only the tasks work is owed on, so
            # the index stays the size of the work in flight, not the history.
            models.Index(
                fields=["phase_entered_at"],
                condition=models.Q(status__in=RECOVERABLE_STATUSES),
                name="task_stuck",
            ),
            # The dashboard's aggregates (codex.tasks.pages.dashboard): every column
            # the status/phase/merge/cycles counts read, so an index-only scan;
            # completions in the throughput window; the merged pull requests
            # the runs' cost per merge divides by. Its first two columns serve
            # every filter on status and phase (no index of its own: one index
            # less written by each intake and transition).
            models.Index(
                fields=[
                    "status",
                    "phase",
                    "pr_merged",
                    "verification_cycles",
                    "review_cycles",
                ],
                name="task_dashboard",
            ),
            models.Index(
                fields=["finished_at"],
                condition=models.Q(status="completed"),
                name="task_completed_finished",
            ),
            models.Index(
                fields=["id"], condition=models.Q(pr_merged=True), name="task_merged"
            ),
            # The scheduler's look for blocked tasks whose retry time came.
            models.Index(
                fields=["blocked_until"],
                condition=models.Q(status="blocked"),
                name="task_blocked_until",
            ),
        ]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(
                    verification_cycles__lte=models.F("verification_max_cycles")
                ),
                name="task_verification_cycles_within_max",
            ),
            models.CheckConstraint(
                condition=models.Q(review_cycles__lte=models.F("review_max_cycles")),
                name="task_review_cycles_within_max",
            ),
            models.CheckConstraint(
                condition=models.Q(current_task__lte=models.F("total_tasks")),
                name="task_current_task_within_total",
            ),
            # The envelope's enums, exactly (docs/domain/tasks.md#created-by,
            # #roles), even for a raw UPDATE.
            models.CheckConstraint(
                condition=models.Q(created_by__in=CreatedBy.values),
                name="task_created_by_valid",
            ),
            models.CheckConstraint(
                condition=models.Q(current_agent__in=Agent.values),
                name="task_current_agent_valid",
            ),
        ]

    def __str__(self) -> str:
        return self.task_id

    # -- immutability ------------------------------------------------------------

    def _tracked_field_names(self) -> tuple[str, ...]:
        return (*self.lease_guarded_fields, *IMMUTABLE_FIELDS)

    def save(self, *args: Any, **kwargs: Any) -> None:
        changed = self.changed_fields() & set(IMMUTABLE_FIELDS)
        if changed:
            raise ImmutableFieldError(
                f"the request and identity of task {self.task_id} cannot change "
                f"after creation (tried: {', '.join(sorted(changed))})"
            )
        self.save_with_queued(
            lambda: super(Task, self).save(*args, **kwargs), using=kwargs.get("using")
        )

    # -- the one call that changes a task ------------------------------------

    def perform(
        self,
        action: str,
        *,
        by: str,
        reason: str = "",
        lease_attempts: int = 1,
        **arguments: Any,
    ) -> Task:
        """Run transition `action` as `by` and save it with its event; the entry
        point for the API, the admin and the pages. Enqueues the next step when
        the task is back in progress. Raises TransitionNotAllowed,
        LeaseUnavailable or VersionConflict with a reason; nothing is written
        then.

        Unless the caller holds the lease, the transition takes it only for the
        one UPDATE that writes it (see VersionedLeasedModel.change_and_save):
        one version, one write, one transaction with the event.
        """
        method = getattr(self, action, None)
        if method is None or not hasattr(method, "_django_fsm"):
            raise TransitionNotAllowed(f"{action!r} is not a transition of a task")
        if reason:
            arguments["reason"] = reason

        def change() -> None:
            method(by=by, **arguments)
            if self.status == Status.IN_PROGRESS:
                # With the ORM broker, one more INSERT in the transition's own
                # statement, not a commit of its own.
                self.enqueue_with_save(ADVANCE_JOB, self.task_id)

        self.change_and_save(by, change, lease_attempts=lease_attempts)
        return self

    # -- what rides on the next save (VersionedLeasedModel.save_with_queued) --

    def record(self, kind: str, *, by: str, reason: str = "", **fields: Any) -> None:
        """Queue an event; it is written in the same transaction as the next save."""
        self.write_with_save(
            Event(task=self, kind=kind, actor=by, reason=reason, **fields)
        )

    def enqueue_with_save(self, func_path: str, *args: Any) -> None:
        """Enqueue `func_path(*args)` as part of the next save: with the ORM
        broker on this database its job row is written by the save itself (one
        more INSERT in the same statement or transaction, see save_with_rows),
        so it exists if and only if the save commits; with Redis, or jobs run
        inline, it is sent once the save's transaction commits."""
        row = job_row(func_path, *args, using=self._state.db or DEFAULT_DB_ALIAS)
        if row is None:
            self.on_save(lambda: enqueue_on_commit(func_path, *args))
            return
        self.write_with_save(row)

    def on_lease_taken_over(self, previous_holder: str | None, holder: str) -> None:
        Event.objects.create(
            task=self,
            kind=EventKind.LEASE,
            actor=holder,
            reason=f"took over the expired lease of {previous_holder}",
            data={"previous_holder": previous_holder},
        )

    def on_lease_broken(
        self, previous_holder: str | None, *, by: str, reason: str
    ) -> None:
        Event.objects.create(
            task=self,
            kind=EventKind.LEASE,
            actor=by,
            reason=reason or "lease force-broken",
            data={"action": "force_break", "previous_holder": previous_holder},
        )

    def check_replay(self, fingerprint: str) -> Task:
        """Return self when `fingerprint` is the request that created it."""
        if fingerprint != self.request_fingerprint:
            raise IdempotencyMismatch(self)
        return self

    # -- helpers used by the transitions ---------------------------------------

    def _finish_phase(self, now: datetime | None = None) -> None:
        progress = self.phase_progress.setdefault(self.phase, {})
        progress["status"] = PhaseStatus.COMPLETED
        progress["completed_at"] = (now or timezone.now()).isoformat()

    def _enter_phase(self, phase: str) -> None:
        now = timezone.now()
        if phase != self.phase:
            self._finish_phase(now)
        progress = self.phase_progress.setdefault(phase, {})
        progress["status"] = PhaseStatus.IN_PROGRESS
        progress.setdefault("started_at", now.isoformat())
        progress.pop("completed_at", None)
        self.phase_entered_at = now
        self.current_agent = PHASE_AGENT[phase]
        self.retry_count = 0

    def record_error(
        self,
        *,
        message: str,
        by: str,
        exit_code: int | None = None,
        code: str = "",
        resolution: str = "",
    ) -> None:
        """Append to the envelope's error list (the last ERRORS_KEPT are kept)."""
        self.errors = [
            *self.errors,
            {
                "timestamp": timezone.now().isoformat(),
                "phase": self.phase,
                "exit_code": exit_code,
                "code": code,
                "message": message,
                "resolution": resolution,
            },
        ][-ERRORS_KEPT:]
        self.record(EventKind.ERROR, by=by, reason=message, data={"code": code})

    # -- queries the guards and callers use ------------------------------------

    @property
    def is_terminal(self) -> bool:
        return self.status in TERMINAL_STATUSES

    @property
    def open_escalation_for_resume(self):
        return self.escalations.resolved_unconsumed().filter(decision="resume").first()

    def latest_verification_report(self):
        return self.verification_reports.order_by("-cycle").first()

    def latest_review_report(self):
        return ReviewReport.objects.newest_of(self.pk)

    def available_status_actions(self) -> list[str]:
        """Status transitions allowed now (guards included), by name."""
        return [t.name for t in self.get_available_status_transitions()]
