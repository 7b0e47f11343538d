"""The status transitions of a task (docs/domain/tasks.md#task-status), and
the calls by which a person pauses, cancels or answers it; mixed into Task."""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any

from django.db import IntegrityError, transaction
from django.utils import timezone
from django_fsm import TransitionNotAllowed, can_proceed, transition

from codex.core.store import LeaseUnavailable
from codex.core.workers import enqueue_on_commit
from codex.tasks.models import guards
from codex.tasks.models.choices import Agent, Phase, Status
from codex.tasks.models.control import ControlAction, ControlRequest
from codex.tasks.models.escalation import Decision
from codex.tasks.models.queryset import ADVANCE_JOB

if TYPE_CHECKING:
    from codex.tasks.models.task import Task

CLEANUP_JOB = "codex.tasks.jobs.clean_up_task"


class StatusTransitions:
    """Task's `status` transitions; the state diagram is in Task's docstring."""

    # -- status transitions (docs/domain/tasks.md#task-status) -----------------

    @transition(
        field="status",
        source=Status.PENDING,
        target=Status.IN_PROGRESS,
        conditions=[guards.phase_is_intake, guards.lease_available],
        custom={"admin": False},
    )
    def start(
        self, *, by: str, reason: str = "task processor picked up the task"
    ) -> None:
        """The task processor picks the task up; it takes the feedback-loop
        limits configured now."""
        self.verification_max_cycles, self.review_max_cycles = (
            guards.configured_loop_limits()
        )
        self._enter_phase(Phase.INTAKE)

    @transition(
        field="status",
        source=Status.IN_PROGRESS,
        target=Status.BLOCKED,
        conditions=[guards.retries_remain],
        custom={"admin": False},
    )
    def block(
        self,
        *,
        by: str,
        reason: str,
        retry_after: timedelta | None = None,
        exit_code: int | None = None,
    ) -> None:
        """A transient failure: wait (until `retry_after` from now when given).

        Only a transient failure blocks: `exit_code` must be 23 or 124
        (guards.TRANSIENT_EXIT_CODES); any other is refused with
        TransitionNotAllowed and nothing changes (a django-fsm condition
        cannot see the transition's arguments, so the body checks it)."""
        if not guards.exit_code_is_transient(exit_code):
            raise TransitionNotAllowed(
                f"only a transient failure blocks a task (exit code 23 or 124), "
                f"not exit code {exit_code}: {reason}"
            )
        self.retry_count += 1
        self.blocked_reason = reason
        self.blocked_until = timezone.now() + retry_after if retry_after else None

    @transition(
        field="status",
        source=Status.BLOCKED,
        target=Status.IN_PROGRESS,
        conditions=[guards.lease_available, guards.backoff_elapsed],
        custom={"label": "Unblock (retry now)"},
    )
    def unblock(self, *, by: str, reason: str = "blocker resolved") -> None:
        """The blocker is gone: continue from the last checkpoint."""
        self._clear_block()

    def _clear_block(self) -> None:
        """A task that is no longer blocked keeps no reason or retry time for
        it (the event log keeps the story)."""
        self.blocked_reason = ""
        self.blocked_until = None

    @transition(
        field="status",
        source=Status.IN_PROGRESS,
        target=Status.ESCALATED,
        custom={"admin": False},
    )
    def escalate(
        self,
        *,
        by: str,
        reason: str,
        questions: list[str] | None = None,
        code: str = "manual_review",
    ) -> None:
        """Hand the task to a person; the phase stays where it is."""
        from codex.tasks.models.escalation import Escalation

        escalation = Escalation(
            task=self,
            phase=self.phase,
            reason=code,
            detail=reason,
            questions=list(questions or []),
        )
        self.on_save(escalation.save)

    @transition(
        field="status",
        source=Status.ESCALATED,
        target=Status.IN_PROGRESS,
        conditions=[
            guards.escalation_resolved_for_resume,
            guards.escalation_not_stale,
        ],
        custom={"admin": False},
    )
    def resolve(self, *, by: str, reason: str = "escalation resolved") -> None:
        """A person resolved the escalation: consume the resolution and go on."""
        # The guard just looked it up: use that row rather than query again.
        escalation = self.__dict__.pop("_escalation_for_resume", None)
        if escalation is None:
            escalation = self.open_escalation_for_resume
        escalation.consumed_at = timezone.now()
        self.on_save(lambda: escalation.save(update_fields=["consumed_at"]))

    @transition(
        field="status",
        source=Status.IN_PROGRESS,
        target=Status.PAUSED,
        custom={"label": "Pause"},
    )
    def pause(self, *, by: str, reason: str = "paused on request") -> None:
        """A user pauses the task."""

    @transition(
        field="status",
        source=Status.PAUSED,
        target=Status.IN_PROGRESS,
        custom={"label": "Resume"},
    )
    def resume(self, *, by: str, reason: str = "resumed on request") -> None:
        """A user resumes a paused task from where it stopped."""

    @transition(
        field="status",
        source=Status.IN_PROGRESS,
        target=Status.COMPLETED,
        conditions=[guards.phase_is_release, guards.pull_request_merged],
        custom={"admin": False},
    )
    def complete(self, *, by: str, reason: str = "pull request merged") -> None:
        """The release phase succeeded."""
        self._clear_block()
        self._finish_phase()
        self.current_agent = Agent.NONE
        self.finished_at = timezone.now()
        self.enqueue_with_save(CLEANUP_JOB, self.task_id)

    @transition(
        field="status",
        source=Status.IN_PROGRESS,
        target=Status.COMPLETED,
        conditions=[guards.children_work_merged],
        custom={"admin": False},
    )
    def complete_children(
        self, *, by: str, reason: str = "the children's pull requests merged"
    ) -> None:
        """A parent whose work its children did (docs/children.md): the
        completion analysis chose to merge and every chosen pull request
        merged. The parent has no pull request of its own."""
        self._clear_block()
        self._finish_phase()
        self.current_agent = Agent.NONE
        self.finished_at = timezone.now()
        self.enqueue_with_save(CLEANUP_JOB, self.task_id)

    @transition(
        field="status",
        source=[
            Status.IN_PROGRESS,
            Status.BLOCKED,
            Status.ESCALATED,
        ],
        target=Status.FAILED,
        custom={"label": "Fail"},
    )
    def fail(self, *, by: str, reason: str = "failed") -> None:
        """An unrecoverable error, or a person decided to give up."""
        self._clear_block()
        self.current_agent = Agent.NONE
        self.finished_at = timezone.now()
        self.on_save(lambda: self.escalations.close_open(by=by, reason="task failed"))
        self.on_save(lambda: self.gates.close_open(by=by, reason="task failed"))
        self.enqueue_with_save(CLEANUP_JOB, self.task_id)

    @transition(
        field="status",
        source=[
            Status.PENDING,
            Status.IN_PROGRESS,
            Status.BLOCKED,
            Status.ESCALATED,
            Status.PAUSED,
        ],
        target=Status.CANCELLED,
        custom={"label": "Cancel"},
    )
    def cancel(self, *, by: str, reason: str = "cancelled on request") -> None:
        """A user cancels the task; any open escalation is closed with it."""
        self._clear_block()
        self.current_agent = Agent.NONE
        self.finished_at = timezone.now()
        self.on_save(
            lambda: self.escalations.close_open(by=by, reason="task cancelled")
        )
        self.on_save(lambda: self.gates.close_open(by=by, reason="task cancelled"))
        # The lease goes with this save; the claim and the instances after it.
        self.enqueue_with_save(CLEANUP_JOB, self.task_id)

    # -- a person's pause, cancel or answer ------------------------------------

    def request_control(
        self, action: str, *, by: str, reason: str = ""
    ) -> tuple[Task, bool]:
        """A person's action on the task (API, console, pages). Pause and cancel
        happen now or, while a worker is in a step (it holds the lease), at the
        end of that step; any other transition happens now or raises
        LeaseUnavailable. Returns (task, deferred).

        Raises TransitionNotAllowed when the task's state does not allow it.
        """
        try:
            return self.perform(action, by=by, reason=reason), False
        except LeaseUnavailable:
            if action not in ControlAction.values:
                raise
            if not can_proceed(getattr(self, action)):
                raise TransitionNotAllowed(
                    f"a task that is {self.status} cannot {action}"
                ) from None
            try:
                with transaction.atomic():
                    ControlRequest.objects.create(
                        task=self, action=action, requested_by=by, reason=reason
                    )
            except IntegrityError:
                pass  # the same request is already waiting: one is enough
            return self, True

    def apply_control_requests(self) -> list[str]:
        """At a step boundary, while holding the lease: apply the pauses and
        cancellations people asked for meanwhile. Returns what was applied;
        the task must be saved afterwards (the requests are marked with it)."""
        applied = []
        for request in ControlRequest.objects.pending_of(self.pk):
            method = getattr(self, request.action)
            if can_proceed(method):
                method(
                    by=request.requested_by,
                    reason=request.reason
                    or f"{request.action} requested at "
                    f"{request.created_at:%H:%M:%S} UTC, applied at step end",
                )
                request.outcome = "applied"
                applied.append(request.action)
            else:
                request.outcome = f"not applied: the task was {self.status}"
            request.applied_at = timezone.now()
            self.on_save(
                lambda request=request: request.save(
                    update_fields=["applied_at", "outcome"]
                )
            )
        return applied

    def resolve_escalation(
        self,
        escalation,
        *,
        decision: str,
        by: str,
        resolution: str = "",
        answers: list[Any] | None = None,
        user=None,
        login: str = "",
        subject: str = "",
    ) -> Task:
        """A person's answer to the open escalation: recorded once, then the task
        resumes, fails or is cancelled, all in one transaction under the lease.

        A gate's escalation (docs/gates.md) is answered with the gate's own
        decisions and rules (`answer_gate`); failing or cancelling it is
        answered here like any other.

        Raises AlreadyResolved when someone resolved it first (the resolution is
        consumed on the first transition, docs/domain/tasks.md#escalations),
        TransitionNotAllowed
        when the task is no longer escalated; nothing is written then.
        """
        if escalation.task_id != self.pk:
            raise ValueError(f"escalation {escalation.pk} is not one of {self.task_id}")
        if escalation.is_gate and decision not in (Decision.FAIL, Decision.CANCEL):
            return self.answer_gate(
                escalation,
                decision=decision,
                by=by,
                note=resolution,
                user=user,
                login=login,
                subject=subject,
            )
        if decision not in escalation.decisions:
            raise ValueError(
                f"a {escalation.get_reason_display().lower()} is answered with "
                f"{', '.join(escalation.decisions)}, not {decision}"
            )
        reason = resolution or f"escalation resolved: {decision}"
        try:
            with transaction.atomic():
                self.acquire_lease(by, attempts=1)
                escalation.record_resolution(
                    decision=decision,
                    by=by,
                    resolution=resolution,
                    answers=answers,
                    user=user,
                )
                if decision == Decision.RESUME:
                    escalation.answer_questions(by, user)
                    self.resolve(by=by, reason=reason)
                else:
                    escalation.consumed_at = escalation.resolved_at
                    escalation.save(update_fields=["consumed_at"])
                    getattr(self, "fail" if decision == Decision.FAIL else "cancel")(
                        by=by, reason=reason
                    )
                self.save(release_lease=True)
        except BaseException:
            # The transaction rolled back: the lease and the version with it.
            self._held_lease = None
            self.refresh_from_db()
            raise
        if self.status == Status.IN_PROGRESS:
            enqueue_on_commit(ADVANCE_JOB, self.task_id)
        return self
