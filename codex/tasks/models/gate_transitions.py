"""The gates' status transitions of a task (docs/gates.md), mixed into Task.

A task waiting at a gate is `escalated`, with an escalation of the gate's
kind; each way out is a transition back to `in_progress`:

in_progress ─await_approval─▶ escalated          (a gate opens, with its escalation)
escalated ─approve─▶ in_progress                 (plan: on to implementation)
escalated ─request_changes─▶ in_progress         (plan: back to the planner)
escalated ─notice_merge─▶ in_progress            (a person merged; `complete` follows)
escalated ─lift_cap─▶ in_progress                (spend under the caps)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.utils import timezone
from django_fsm import TransitionNotAllowed, transition

from codex.events.models import EventKind
from codex.tasks.models import gate_guards, guards
from codex.tasks.models.choices import Phase, PhaseStatus, Status
from codex.tasks.models.escalation import (
    GATE_REASONS,
    AlreadyResolved,
    Decision,
    Escalation,
)
from codex.tasks.models.gates import (
    Decider,
    Gate,
    GateDecision,
    GateKind,
    GateMode,
    GateRefused,
    PendingDecision,
)

if TYPE_CHECKING:
    from codex.tasks.models.task import Task


class GateTransitions:
    """Task's gate transitions; the state diagram is in Task's docstring."""

    @transition(
        field="status",
        source=Status.IN_PROGRESS,
        target=Status.ESCALATED,
        custom={"admin": False},
    )
    def await_approval(
        self,
        *,
        by: str,
        reason: str,
        kind: str = GateKind.PLAN,
        mode: str = GateMode.APPROVAL,
        subject: str = "",
    ) -> None:
        """Wait for a person: an escalation of the gate's kind (announced and
        answered like every escalation) and the gate saying on what and why;
        the phase stays."""
        escalation = Escalation(
            task=self, phase=self.phase, reason=GATE_REASONS[kind], detail=reason
        )
        gate = Gate(
            task=self,
            kind=kind,
            mode=mode,
            reason=reason,
            subject=subject,
            escalation=escalation,
        )
        self.on_save(escalation.save)
        self.on_save(gate.save)

    @transition(
        field="status",
        source=Status.ESCALATED,
        target=Status.IN_PROGRESS,
        conditions=list(gate_guards.APPROVE_GUARDS),
        custom={"admin": False},
    )
    def approve(self, *, by: str, reason: str = "approved") -> None:
        """A person with write access, not the requester, approved the gate."""
        self._close_gate()

    @transition(
        field="status",
        source=Status.ESCALATED,
        target=Status.IN_PROGRESS,
        conditions=list(gate_guards.REQUEST_CHANGES_GUARDS),
        custom={"admin": False},
    )
    def request_changes(
        self, *, by: str, reason: str = "changes requested", feedback: str = ""
    ) -> None:
        """The plan goes back to the planner with the person's text, counted
        like the verification and review loops."""
        self._close_gate()
        self.plan_cycles += 1
        self.feedback_history.setdefault("plan", []).append(
            {
                "cycle": self.plan_cycles,
                "at": timezone.now().isoformat(),
                "by": by,
                "feedback": {"message": feedback},
            }
        )
        progress = self.phase_progress.setdefault(Phase.PLANNING, {})
        progress["status"] = PhaseStatus.IN_PROGRESS
        progress.pop("completed_at", None)
        self.phase_entered_at = timezone.now()
        self.retry_count = 0

    @transition(
        field="status",
        source=Status.ESCALATED,
        target=Status.IN_PROGRESS,
        conditions=[
            guards.phase_is_release,
            guards.pull_request_merged,
            gate_guards.waits_for_a_merge,
        ],
        custom={"admin": False},
    )
    def notice_merge(self, *, by: str, reason: str = "merged by a person") -> None:
        """A person merged the pull request the task waited on: the gate
        closes; `complete` follows in the same write (take_merge)."""
        self._settle_open_gate(GateDecision.MERGED, by=by)
        self.record(
            EventKind.CONTROL,
            by=by,
            reason=f"merge gate: merged by a person ({reason})",
            data={"gate": GateKind.MERGE, "decision": GateDecision.MERGED},
        )

    def take_merge(self, *, by: str, reason: str) -> None:
        """A person merged what waited at the merge gate: the gate closes
        (escalated → in_progress) and the task completes (in_progress →
        completed), two transitions of one write."""
        self.notice_merge(by=by, reason=reason)
        self.complete(by=by, reason=reason)

    @transition(
        field="status",
        source=Status.ESCALATED,
        target=Status.IN_PROGRESS,
        conditions=[
            gate_guards.waits_at_a_spend_cap,
            gate_guards.spend_is_under_the_caps,
        ],
        custom={"admin": False},
    )
    def lift_cap(self, *, by: str, reason: str = "spend under the caps again") -> None:
        """The month's spend is under the caps again: the next step runs."""
        self._settle_open_gate(GateDecision.UNDER_CAP, by=by)

    # -- helpers ------------------------------------------------------------

    def _settle_open_gate(self, decision: str, *, by: str) -> None:
        """Close the open gate with `decision` by `by`, with its escalation
        (saved with the transition)."""
        gate = self.open_gate
        if gate is None:
            return
        gate.decision, gate.decided_by = decision, by
        gate.decided_at = timezone.now()
        gate.settle_escalation(gate.decided_at)
        self.on_save(gate.save_with_escalation)

    def _close_gate(self) -> None:
        pending: PendingDecision = self.__dict__.pop("_gate_decision")
        pending.gate.record_decision(pending)
        gate = pending.gate
        self.on_save(gate.save_with_escalation)
        self.record(
            EventKind.CONTROL,
            by=pending.decider.label,
            reason=f"{gate.get_kind_display().lower()}: "
            f"{gate.get_decision_display().lower()} by {pending.decider.label}",
            data={**gate.as_event_data(), "feedback": pending.feedback[:2000]},
        )

    @property
    def open_gate(self) -> Gate | None:
        """The gate the task waits at, if any (with its escalation)."""
        return self.gates.open().select_related("escalation").first()

    def decide_gate(
        self: Task,
        decision: str,
        *,
        decider: Decider,
        subject: str = "",
        feedback: str = "",
    ) -> Task:
        """A person's decision on the open gate: approve, or (a plan) request
        changes with `feedback`. Saved with its transition and event in one
        write; an approved plan moves on to implementation in the same write.

        Raises GateRefused with the reason when a guard refuses (the requester
        approving, someone without write access, a stale plan, Codex itself);
        nothing is written then. LeaseUnavailable / VersionConflict as perform.
        """
        gate = self.open_gate
        if gate is None or self.status != Status.ESCALATED:
            raise GateRefused(f"{self.task_id} is not waiting for approval")
        feedback = (feedback or "").replace("\x00", "").strip()[:10_000]
        pending = PendingDecision(gate, decision, decider, subject or "", feedback)
        self.__dict__["_gate_decision"] = pending
        checks = (
            gate_guards.APPROVE_GUARDS
            if decision == GateDecision.APPROVED
            else gate_guards.REQUEST_CHANGES_GUARDS
        )
        refused = gate_guards.first_refusing(self, checks)
        if refused is not None:
            self.__dict__.pop("_gate_decision", None)
            raise GateRefused(gate_guards.REFUSALS[refused], refused.__name__)
        what = gate.get_kind_display().lower()

        def change() -> None:
            self.__dict__["_gate_decision"] = pending
            if decision == GateDecision.APPROVED:
                self.approve(by=decider.label, reason=f"{what}: approved")
                if gate.kind == GateKind.PLAN:
                    self.begin_implementation(
                        by=decider.label, reason=f"plan approved by {decider.label}"
                    )
            else:
                self.request_changes(
                    by=decider.label,
                    reason=f"{what}: changes requested",
                    feedback=feedback,
                )
            self.enqueue_with_save("codex.tasks.jobs.advance_task", self.task_id)

        try:
            self.change_and_save(decider.label, change, lease_attempts=1)
        finally:
            self.__dict__.pop("_gate_decision", None)
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
                refusal = gate_guards.REFUSALS[gate_guards.spend_is_under_the_caps]
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
