"""The scheduled look at tasks waiting at a gate (docs/gates.md).

A task waiting at a gate is escalated with the gate's escalation. Merge
gates, for when no webhook tells Codex (the local forge, GitHub without
webhooks, or a lost delivery): a pull request a person merged completes its
task (notice_merge, then complete); at an `approval` gate, an approving review
on the forge by someone allowed decides it as the webhook would. Spend gates:
a task whose repository and installation are under their monthly caps again
goes on (lift_cap)."""

from __future__ import annotations

from django_fsm import TransitionNotAllowed

from codex.core.store import LeaseUnavailable, VersionConflict
from codex.events.models import EventKind
from codex.repositories.forge import get_forge
from codex.tasks.models import (
    Decider,
    GateDecision,
    GateKind,
    GateMode,
    GateRefused,
    Status,
    Task,
)

BY = "system:gate-check"


def check_merge_gates(limit: int = 200) -> dict[str, int]:
    """Look at every task waiting at a merge gate once; returns the counts."""
    counts = {"checked": 0, "merged": 0, "approved": 0}
    waiting = (
        Task.objects.filter(status=Status.ESCALATED, phase="release")
        .filter(gates__decision="", gates__kind=GateKind.MERGE)
        .select_related("repository")[:limit]
    )
    for task in waiting:
        counts["checked"] += 1
        outcome = check_one(task)
        if outcome in counts:
            counts[outcome] += 1
    return counts


def check_one(task: Task) -> str:
    """Look at one waiting task's pull request; what happened."""
    gate = task.open_gate
    if gate is None or not task.branch:
        return "nothing"
    forge = get_forge(task.repository)
    pull = forge.find_pull_request(task.branch)
    if pull is None:
        return "nothing"
    try:
        if pull["state"] == "merged":
            return _merged(task, pull)
        if gate.mode == GateMode.APPROVAL:
            return _approved(task, forge, pull, gate.subject)
    except (LeaseUnavailable, VersionConflict):
        return "busy"  # the next round looks again
    return "nothing"


def _merged(task: Task, pull) -> str:
    def change() -> None:
        task.pr_merged = True
        task.record(
            EventKind.CONTROL,
            by=BY,
            reason=f"pull request {pull['url']} found merged",
            data={"pr": pull["number"]},
        )
        task.take_merge(by=BY, reason=f"pull request {pull['url']} merged")

    try:
        task.change_and_save(BY, change)
    except TransitionNotAllowed:
        return "nothing"
    return "merged"


def _approved(task: Task, forge, pull, subject: str) -> str:
    approvals = getattr(forge, "approvals", None)
    if approvals is None:
        return "nothing"
    for approval in approvals(pull["number"]):
        login = approval["login"]
        if approval["commit"] != subject or login.lower().endswith("[bot]"):
            continue
        decider = Decider(
            label=f"github:{login}",
            login=login,
            may_approve=forge.user_can_write(login),
        )
        try:
            task.decide_gate(GateDecision.APPROVED, decider=decider, subject=subject)
        except GateRefused:
            continue  # the requester, a reader: look at the next one
        return "approved"
    return "nothing"


def check_spend_caps(limit: int = 200) -> dict[str, int]:
    """Let the tasks waiting at a spend cap go on once they are under it."""
    counts = {"checked": 0, "lifted": 0}
    waiting = (
        Task.objects.filter(status=Status.ESCALATED)
        .filter(gates__decision="", gates__kind=GateKind.SPEND)
        .select_related("repository")[:limit]
    )
    for task in waiting:
        counts["checked"] += 1
        try:
            task.perform("lift_cap", by=BY)
        except (TransitionNotAllowed, LeaseUnavailable, VersionConflict):
            continue  # still at the cap, or busy: the next round looks again
        counts["lifted"] += 1
    return counts
