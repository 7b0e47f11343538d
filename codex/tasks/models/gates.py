"""Gates: points where a task waits for a person (docs/gates.md).

Two kinds. After planning, when plan approval is asked for (by the
repository's policy or the request), spec.md, plan.md and tasks.md wait for a
person to approve them or to ask for changes. At release, when the
repository's merge gate is `approval`, the pull request waits for a person
with write access other than the requester to approve it; when it is
`manual`, for a person to merge it. A third kind waits at a monthly spend
cap until it is raised.

While a task waits at a gate its status is `escalated`, with an escalation of
the gate's own kind (plan_approval, merge_approval, spend_cap) answered where
every escalation is answered; the Gate row keeps what the decision is about
(`subject`, `mode`) and, once decided, who decided and when. A gate is
opened by the task's `await_approval` transition and closed by `approve`,
`request_changes`, `notice_merge` or `lift_cap`
(codex.tasks.models.gate_transitions), which resolve its escalation with it.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import models
from django.utils import timezone

if TYPE_CHECKING:
    from codex.tasks.models.task import Task

PLAN_DOCUMENTS = ("spec.md", "plan.md", "tasks.md")


class GateKind(models.TextChoices):
    PLAN = "plan", "Plan approval"
    MERGE = "merge", "Merge approval"
    SPEND = "spend", "Spend cap"


class GateMode(models.TextChoices):
    APPROVAL = "approval", "A person approves"
    MANUAL = "manual", "A person merges"
    CAP = "cap", "A person raises the cap (or the month ends)"


class GateDecision(models.TextChoices):
    APPROVED = "approved", "Approved"
    CHANGES_REQUESTED = "changes_requested", "Changes requested"
    MERGED = "merged", "Merged by a person"
    WITHDRAWN = "withdrawn", "Withdrawn (the task ended)"
    UNDER_CAP = "under_cap", "Spend back under the cap"


# The escalation's decision a gate's decision stands for.
ESCALATION_DECISION = {
    GateDecision.APPROVED: "approve",
    GateDecision.CHANGES_REQUESTED: "request_changes",
    GateDecision.MERGED: "resume",
    GateDecision.UNDER_CAP: "resume",
    GateDecision.WITHDRAWN: "cancel",
}


class GateRefused(Exception):
    """A decision on a gate that its guards refuse; `reason` says which."""

    code = "gate_refused"

    def __init__(self, reason: str, guard: str = "") -> None:
        self.reason = reason
        self.guard = guard  # the refusing guard's name ("" when none ran)
        super().__init__(reason)

    @property
    def is_about_the_person(self) -> bool:
        """Refused for who decides (not for the task's state): a 403."""
        return self.guard in (
            "decider_is_a_person",
            "decider_is_not_the_requester",
            "decider_may_approve",
        )


@dataclass(frozen=True)
class Decider:
    """Who decides on a gate: the event log's label (user:alice, github:bob),
    the Codex user or forge login behind it, and whether their role or the
    forge's permissions let them approve (write access)."""

    label: str
    user: Any = None
    login: str = ""
    may_approve: bool = False


@dataclass(frozen=True)
class PendingDecision:
    """A decision being made on `gate`, read by the gate guards."""

    gate: Gate
    decision: str
    decider: Decider
    subject: str = ""
    feedback: str = ""


class GateQuerySet(models.QuerySet):
    def open(self) -> GateQuerySet:
        return self.filter(decision="")

    def close_open(self, *, by: str, reason: str) -> int:
        """Withdraw every open gate (the task ended some other way)."""
        return self.open().update(
            decision=GateDecision.WITHDRAWN,
            decided_at=timezone.now(),
            decided_by=by,
            feedback=reason,
        )


class Gate(models.Model):
    """One wait of a task for a person: what is waited for (`kind`, `mode`),
    why (`reason`), on what (`subject`: the plan's version or the pull
    request's head sha) and, once decided, the decision with who and when."""

    task = models.ForeignKey(
        "tasks.Task", on_delete=models.CASCADE, related_name="gates"
    )
    # The escalation the task waits with (none for an approval recorded from
    # the forge without a wait).
    escalation = models.OneToOneField(
        "tasks.Escalation",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="gate",
    )
    kind = models.CharField(max_length=10, choices=GateKind.choices)
    mode = models.CharField(
        max_length=10, choices=GateMode.choices, default=GateMode.APPROVAL
    )
    reason = models.TextField()
    subject = models.CharField(max_length=64, blank=True)
    opened_at = models.DateTimeField(default=timezone.now)
    decision = models.CharField(max_length=20, choices=GateDecision.choices, blank=True)
    decided_by = models.CharField(max_length=200, blank=True)
    decided_by_user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    feedback = models.TextField(blank=True)

    objects = GateQuerySet.as_manager()

    class Meta:
        ordering = ["opened_at", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["task"],
                condition=models.Q(decision=""),
                name="gate_one_open_per_task",
            )
        ]

    def __str__(self) -> str:
        return f"{self.kind} gate of {self.task_id} ({self.decision or 'open'})"

    @property
    def is_open(self) -> bool:
        return not self.decision

    def record_decision(self, pending: PendingDecision) -> None:
        """Write `pending` onto the gate and its escalation (both saved with
        the task's transition)."""
        self.decision = pending.decision
        self.decided_by = pending.decider.label
        self.decided_by_user = pending.decider.user
        self.decided_at = timezone.now()
        self.feedback = pending.feedback
        self.settle_escalation(self.decided_at)

    def settle_escalation(self, now) -> None:
        """The gate's escalation answered with the gate's decision and taken
        at once (the task goes on in the same write): resolved and consumed,
        by whoever decided the gate."""
        escalation = self.escalation
        if escalation is None or escalation.resolved_at is not None:
            return
        escalation.resolved_at = escalation.consumed_at = now
        escalation.decision = ESCALATION_DECISION[self.decision]
        escalation.resolved_by_label = self.decided_by
        escalation.resolved_by = self.decided_by_user
        escalation.resolution = self.feedback or self.get_decision_display()

    def save_with_escalation(self) -> None:
        """Save the gate and its settled escalation (a task's on_save)."""
        if self.escalation is not None and self.escalation.resolved_at is not None:
            self.escalation.save(
                update_fields=[
                    "resolved_at",
                    "consumed_at",
                    "decision",
                    "resolved_by_label",
                    "resolved_by",
                    "resolution",
                ]
            )
        self.save()

    def as_event_data(self) -> dict[str, Any]:
        """The gate's decision for the event log."""
        return {
            "gate": self.kind,
            "mode": self.mode,
            "subject": self.subject,
            "decision": self.decision,
            "decided_by": self.decided_by,
            "decided_at": self.decided_at.isoformat() if self.decided_at else None,
        }


def plan_version(task: Task) -> str:
    """A short fingerprint of the task's newest spec, plan and tasks: what a
    person approves. A plan written again after the page was loaded has
    another version, and an approval of the old one is refused."""
    digest = hashlib.sha256()
    newest: dict[str, str] = {}
    rows = task.artifacts.filter(name__in=PLAN_DOCUMENTS).order_by(
        "name", "-created_at", "-id"
    )
    for name, sha in rows.values_list("name", "sha256"):
        newest.setdefault(name, sha)
    for name in PLAN_DOCUMENTS:
        digest.update(f"{name}:{newest.get(name, '')}\n".encode())
    return digest.hexdigest()[:16]


def plan_approval_needed(task: Task) -> bool:
    """Whether the task's plan waits for a person: asked for by the request
    or by the repository's policy."""
    return bool(task.plan_approval_required or task.repository.plan_approval)
