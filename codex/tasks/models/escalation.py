"""Escalations: the questions a task puts to a person, and their one answer."""

from __future__ import annotations

import contextlib
from typing import Any

from django.conf import settings
from django.db import models
from django.utils import timezone

from codex.core.store import hot_rows


class EscalationReason(models.TextChoices):
    NEEDS_CLARIFICATION = "needs_clarification", "Needs clarification"
    VERIFICATION_LIMIT = "verification_max_cycles", "Verification cycles exhausted"
    REVIEW_LIMIT = "review_max_cycles", "Review cycles exhausted"
    REVIEW_ITERATIONS = "review_max_iterations", "Review iterations exhausted"
    RETRY_LIMIT = "retry_limit", "Retry limit exceeded"
    SECURITY = "security", "Security issue"
    MANUAL_REVIEW = "manual_review", "Manual review"
    # A gate (docs/gates.md): the escalation of a task waiting for a person's
    # approval, a person's merge, or a raised spend cap.
    PLAN_APPROVAL = "plan_approval", "Plan approval"
    MERGE_APPROVAL = "merge_approval", "Merge approval"
    SPEND_CAP = "spend_cap", "Spend cap"


# The escalation reason of each gate kind (codex.tasks.models.gates.GateKind).
GATE_REASONS = {
    "plan": EscalationReason.PLAN_APPROVAL,
    "merge": EscalationReason.MERGE_APPROVAL,
    "spend": EscalationReason.SPEND_CAP,
}


# The one thing that helps a task escalated for each reason
# (docs/domain/tasks.md#escalations): what the inbox asks of a person.
NEXT_STEPS = {
    EscalationReason.NEEDS_CLARIFICATION: "Answer the questions: the task resumes "
    "with your answers.",
    EscalationReason.VERIFICATION_LIMIT: "Read the last verification report; resume "
    "with guidance for the developer, or fail the task.",
    EscalationReason.REVIEW_LIMIT: "Read the last review report; resume with "
    "guidance for the developer, or fail the task.",
    EscalationReason.REVIEW_ITERATIONS: "Raise review.max_iterations in the console "
    "(Configuration), then resume; or fail the task.",
    EscalationReason.RETRY_LIMIT: "Fix what the last error says, then resume.",
    EscalationReason.SECURITY: "Look at the security finding; resume with "
    "guidance, or fail the task.",
    EscalationReason.MANUAL_REVIEW: "Read the reason; resume with guidance, or "
    "fail or cancel the task.",
    EscalationReason.PLAN_APPROVAL: "Read spec.md, plan.md and tasks.md; approve "
    "the plan or ask for changes (not your own request).",
    EscalationReason.MERGE_APPROVAL: "Review the pull request and approve it at "
    "its head commit (not your own request).",
    EscalationReason.SPEND_CAP: "Raise the monthly cap in the console "
    "(Repositories) or CODEX_MONTHLY_CAP_USD, then resume; or wait for next "
    "month.",
}
MANUAL_MERGE_STEP = (
    "Merge the pull request yourself: Codex notices the merge and completes the task."
)


class Decision(models.TextChoices):
    RESUME = "resume", "Resume the task"
    # A gate's answers (docs/gates.md): approve what waits, or send a plan
    # back with what should change.
    APPROVE = "approve", "Approve"
    REQUEST_CHANGES = "request_changes", "Ask for changes"
    FAIL = "fail", "Fail the task"
    CANCEL = "cancel", "Cancel the task"


def decisions_for(reason: str, mode: str = "approval") -> list[str]:
    """The decisions a person may answer an escalation of `reason` with: a
    plan approval is approved or sent back, a merge approval approved, a
    merge a person makes or a spend cap only ended (the merge itself, or a
    cap raised, lets the task go on: "resume" asks Codex to look again);
    every other escalation resumes. Failing or cancelling is always open."""
    if reason == EscalationReason.PLAN_APPROVAL:
        first = [Decision.APPROVE, Decision.REQUEST_CHANGES]
    elif reason == EscalationReason.MERGE_APPROVAL:
        first = [Decision.APPROVE] if mode == "approval" else []
    else:
        first = [Decision.RESUME]
    return [*first, Decision.FAIL, Decision.CANCEL]


class AlreadyResolved(Exception):
    """The escalation was resolved before: its answer is used once
    (docs/domain/tasks.md#escalations)."""

    code = "already_resolved"

    def __init__(self, escalation: Escalation) -> None:
        self.escalation = escalation
        super().__init__(
            f"escalation {escalation.pk} was already resolved at "
            f"{escalation.resolved_at:%Y-%m-%d %H:%M:%S} UTC"
            if escalation.resolved_at
            else f"escalation {escalation.pk} was already resolved"
        )


class EscalationQuerySet(models.QuerySet):
    def open(self) -> EscalationQuerySet:
        return self.filter(resolved_at__isnull=True)

    def answered_in(self, phase: str) -> EscalationQuerySet:
        """Escalations of `phase` a person answered and let go on (their
        answers or note go to that phase's agent), oldest first. A gate's
        is not among them: its decision is the gate's (a plan sent back
        reaches the planner as feedback)."""
        return (
            self.filter(phase=phase, decision=Decision.RESUME)
            .exclude(reason__in=GATE_REASONS.values())
            .exclude(answers=[], resolution="")
            .order_by("resolved_at", "id")
        )

    @hot_rows
    def answered_to(self, task_id: int, phase: str) -> EscalationQuerySet:
        """The task's escalations answered in `phase` (answered_in), read as
        each step of an agent starts."""
        return self.filter(task_id=task_id).answered_in(phase)

    def resolved_unconsumed(self) -> EscalationQuerySet:
        return self.filter(resolved_at__isnull=False, consumed_at__isnull=True)

    def close_open(self, *, by: str, reason: str) -> int:
        """Close every open escalation (the task ended some other way)."""
        now = timezone.now()
        return self.open().update(
            resolved_at=now,
            consumed_at=now,
            resolution=reason,
            decision=Decision.CANCEL,
            resolved_by_label=by,
        )


class Escalation(models.Model):
    """A task's request for a human decision (docs/domain/tasks.md#escalations).

    Created when the task's status becomes `escalated`; resolved once by a person
    (answers to the questions, a resolution text and a decision: resume, fail or
    cancel). The resolution is consumed by the task's transition exactly once; a
    second resolution is refused (AlreadyResolved). At most one escalation per
    task is open at a time.
    """

    task = models.ForeignKey(
        "tasks.Task", on_delete=models.CASCADE, related_name="escalations"
    )
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    phase = models.CharField(max_length=20)
    reason = models.CharField(max_length=40, choices=EscalationReason.choices)
    detail = models.TextField(blank=True)
    questions = models.JSONField(default=list, blank=True)

    resolved_at = models.DateTimeField(null=True, blank=True, editable=False)
    resolved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        editable=False,
    )
    resolved_by_label = models.CharField(max_length=200, blank=True, editable=False)
    resolution = models.TextField(blank=True, editable=False)
    answers = models.JSONField(default=list, blank=True, editable=False)
    decision = models.CharField(
        max_length=20, choices=Decision.choices, blank=True, editable=False
    )
    consumed_at = models.DateTimeField(null=True, blank=True, editable=False)
    # When the answer first reached an agent's prompt (the task's history
    # says which role).
    delivered_at = models.DateTimeField(null=True, blank=True, editable=False)

    objects = EscalationQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["task"],
                condition=models.Q(resolved_at__isnull=True),
                name="escalation_one_open_per_task",
            )
        ]
        indexes = [
            models.Index(
                fields=["created_at"],
                condition=models.Q(resolved_at__isnull=True),
                name="escalation_open",
            )
        ]

    def __str__(self) -> str:
        return f"{self.task_id}: {self.get_reason_display()}"

    @property
    def is_open(self) -> bool:
        return self.resolved_at is None

    @property
    def is_gate(self) -> bool:
        """A gate's escalation: the task waits for an approval, a merge or a
        raised spend cap (docs/gates.md); its Gate row says on what."""
        return self.reason in GATE_REASONS.values()

    @property
    def next_step(self) -> str:
        """The one action that helps, in a sentence (the inbox shows it)."""
        gate = getattr(self, "gate", None) if self.is_gate else None
        if gate is not None and gate.mode == "manual":
            return MANUAL_MERGE_STEP
        return NEXT_STEPS.get(self.reason, NEXT_STEPS["manual_review"])

    @property
    def decisions(self) -> list[str]:
        """What a person may answer it with (`decisions_for`)."""
        gate = getattr(self, "gate", None) if self.is_gate else None
        mode = gate.mode if gate is not None else "approval"
        return decisions_for(self.reason, mode)

    def answer_questions(self, by: str, user=None) -> None:
        """Write a resolution's answers on the task's questions to a person
        that this escalation carried (communication.questions), each once,
        matched by the question's text; a single answer answers them all."""
        from codex.tasks.models.analysis import AlreadyAnswered, Role

        answers = [str(a) for a in self.answers if str(a).strip()]
        if not answers:
            return
        asked = [str(q) for q in self.questions]
        waiting = self.task.questions.unanswered().filter(to_role=Role.HUMAN)
        for question in waiting:
            if question.question not in asked:
                continue
            index = asked.index(question.question)
            answer = answers[index] if index < len(answers) else answers[-1]
            # Another resolution may have answered it first.
            with contextlib.suppress(AlreadyAnswered):
                question.record_answer(answer, by=by, user=user)

    def record_resolution(
        self,
        *,
        decision: str,
        by: str,
        resolution: str = "",
        answers: list[Any] | None = None,
        user=None,
    ) -> None:
        """Write the person's answer, once. Raises AlreadyResolved on a second call,
        even from another process: the UPDATE only matches an open escalation."""
        if decision not in Decision.values:
            raise ValueError(f"decision must be one of {', '.join(Decision.values)}")
        now = timezone.now()
        values = {
            "resolved_at": now,
            "resolved_by": user,
            "resolved_by_label": by,
            "resolution": resolution,
            "answers": list(answers or []),
            "decision": decision,
        }
        updated = Escalation.objects.filter(
            pk=self.pk, resolved_at__isnull=True
        ).update(**values)
        if not updated:
            self.refresh_from_db()
            raise AlreadyResolved(self)
        for name, value in values.items():
            setattr(self, name, value)
