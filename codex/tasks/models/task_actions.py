"""One call for people and jobs: a transition with its event and its next
step, a person's pause or cancel deferred to the step's end, an
escalation's answer; mixed into Task."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.db import IntegrityError, transaction
from django.utils import timezone
from django_fsm import TransitionNotAllowed, can_proceed

from codex.core.workers import enqueue_on_commit
from codex.tasks.models.choices import Status
from codex.tasks.models.control import ControlRequest
from codex.tasks.models.queryset import ADVANCE_JOB

if TYPE_CHECKING:
    from codex.tasks.models.task import Task


class TaskActions:
    """The entry points that change a task and save it: `perform` for the
    API, the admin, the pages and the jobs; `request_control` and
    `apply_control_requests` for pauses and cancels; `resolve_escalation`."""

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

    def request_control(
        self, action: str, *, by: str, reason: str = ""
    ) -> tuple[Task, bool]:
        """A person's action on the task (API, console, pages). Pause and cancel
        happen now or, while a worker is in a step (it holds the lease), at the
        end of that step; any other transition happens now or raises
        LeaseUnavailable. Returns (task, deferred).

        Raises TransitionNotAllowed when the task's state does not allow it.
        """
        from codex.core.store import LeaseUnavailable
        from codex.tasks.models.control import ControlAction

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
        from codex.tasks.models.escalation import Decision

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

    def answer_gate(
        self,
        escalation,
        *,
        decision: str,
        by: str,
        note: str = "",
        user=None,
        login: str = "",
        subject: str = "",
    ) -> Task:
        """A person's answer to a gate's escalation (docs/gates.md): approve
        or ask for changes (the gate's guards decide: never the requester
        alone, never Codex, on the current version), or, at a spend cap,
        resume once the spend is under the caps. The caller checked that the
        person may decide gates (a team role, write access on the forge).

        Raises AlreadyResolved when the gate was decided meanwhile, GateRefused
        with the reason when its rules refuse; nothing is written then."""
        from codex.tasks.models.escalation import AlreadyResolved, Decision
        from codex.tasks.models.gate_guards import REFUSALS, spend_is_under_the_caps
        from codex.tasks.models.gates import Decider, GateDecision, GateRefused

        escalation.refresh_from_db()
        if not escalation.is_open:
            raise AlreadyResolved(escalation)
        if decision not in escalation.decisions:
            raise GateRefused(
                f"a {escalation.get_reason_display().lower()} is answered with "
                f"{' or '.join(escalation.decisions)}, not {decision}",
                "gate_is_for_a_person",
            )
        gate = escalation.gate
        if decision == Decision.RESUME:  # a spend cap: only a raised cap lifts it
            try:
                self.perform("lift_cap", by=by, reason=note or "cap raised")
            except TransitionNotAllowed:
                refusal = REFUSALS[spend_is_under_the_caps]
                raise GateRefused(refusal, "spend_is_under_the_caps") from None
        elif gate.kind == "plan" and not subject:
            raise GateRefused(
                "name the plan version you decide on: the current one is "
                f"{gate.subject}",
                "decision_is_on_the_current_subject",
            )
        else:
            self.decide_gate(
                GateDecision.APPROVED
                if decision == Decision.APPROVE
                else GateDecision.CHANGES_REQUESTED,
                decider=Decider(label=by, user=user, login=login, may_approve=True),
                subject=subject,
                feedback=note,
            )
        escalation.refresh_from_db()  # decided with its gate: the caller shows it
        return self
