"""The merge gate at release (docs/gates.md), per the repository's policy:

- auto: Codex merges once review approves and the checks pass;
- approval: Codex merges only what a person with write access, other than the
  requester and never Codex, approved at the pull request's head commit:
  on the task page (any forge) or by an approving review on GitHub (read here
  and from the review webhook); until then the task waits, escalated with
  the gate's merge-approval escalation and the reason;
- manual: a person merges; the task waits until the merge is noticed (the
  pull_request webhook, or this step finding the pull request merged).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.utils import timezone

from codex.events.models import EventKind
from codex.repositories.models import MergeGate
from codex.tasks.models import Gate, GateDecision, GateKind, GateMode
from codex.tasks.runners import PhaseResult

if TYPE_CHECKING:
    from codex.repositories.forge import Forge
    from codex.tasks.models import Task


def merge_gate(task: Task, forge: Forge, branch: str) -> PhaseResult | None:
    """None when Codex may merge the task's pull request now; otherwise the
    result that makes the task wait at the gate, saying why."""
    policy = task.repository.merge_gate
    if policy == MergeGate.AUTO:
        return None
    pull = forge.find_pull_request(branch)
    if pull is None or pull["state"] == "merged":
        return None  # release fails with its reason, or settles the merge
    sha = pull["head_sha"]
    if policy == MergeGate.MANUAL:
        return PhaseResult.awaiting(
            f"pull request {pull['url']} waits for a person to merge it "
            "(merge gate: manual); Codex completes the task when it is merged",
            kind=GateKind.MERGE,
            mode=GateMode.MANUAL,
            subject=sha,
        )
    approved = task.gates.filter(
        kind=GateKind.MERGE, decision=GateDecision.APPROVED, subject=sha
    )
    if sha and approved.exists():
        return None
    if sha and _approved_on_the_forge(task, forge, pull["number"], sha):
        return None
    return PhaseResult.awaiting(
        f"pull request {pull['url']} waits for approval at {sha[:12]} by a "
        "person with write access other than the requester (merge gate: "
        "approval): an approving review on GitHub, or Approve on the task page",
        kind=GateKind.MERGE,
        subject=sha,
    )


def _approved_on_the_forge(task: Task, forge: Forge, number: int, sha: str) -> bool:
    """Whether someone allowed to approves the pull request at `sha` on the
    forge; their approval is recorded as a decided gate and in the event log
    (with the step's save)."""
    approvals = getattr(forge, "approvals", None)
    if approvals is None:
        return False
    requester = (task.requester_login or "").lower()
    for approval in approvals(number):
        login = approval["login"]
        if approval["commit"] != sha or login.lower() == requester:
            continue
        # GitHub refuses a review of one's own pull request: Codex's account,
        # which opened it, cannot approve it there.
        if login.lower().endswith("[bot]"):
            continue
        if not forge.user_can_write(login):
            continue
        _record_forge_approval(task, login, sha)
        return True
    return False


def _record_forge_approval(task: Task, login: str, sha: str) -> None:
    label = f"github:{login}"
    gate = Gate(
        task=task,
        kind=GateKind.MERGE,
        reason="approved on the pull request",
        subject=sha,
        decision=GateDecision.APPROVED,
        decided_by=label,
        decided_at=timezone.now(),
    )
    task.on_save(gate.save)
    task.record(
        EventKind.CONTROL,
        by=label,
        reason=f"merge approval: approved by {label} on the pull request",
        data=gate.as_event_data(),
    )
