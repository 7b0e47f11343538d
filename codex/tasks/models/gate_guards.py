"""The guards of the gates as named predicates over a task (docs/gates.md).

A task waiting at a gate is `escalated` with the gate's escalation; these
guards keep the gate's own rules whichever way the answer comes.

A decision on a gate is put on the task (`_gate_decision`, a PendingDecision)
by Task.decide_gate before the transition runs; django-fsm then calls these
with the task. `REFUSALS` gives each guard the reason a person is shown when
it is false, in the order they are checked.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.conf import settings

if TYPE_CHECKING:
    from codex.tasks.models.gates import PendingDecision
    from codex.tasks.models.task import Task

# Actor labels of Codex itself: its jobs, agents and intake never decide a gate.
CODEX_ACTORS = ("system:", "agent:", "intake:", "worker:", "codex")


def default_plan_max_cycles() -> int:
    return int(getattr(settings, "CODEX_PLAN_MAX_CYCLES", 3))


def _pending(task: Task) -> PendingDecision | None:
    return task.__dict__.get("_gate_decision")


def gate_is_open(task: Task) -> bool:
    """The decision is on the task's open gate (not one decided already)."""
    pending = _pending(task)
    return pending is not None and pending.gate.is_open


def decision_is_approval(task: Task) -> bool:
    """approve: the decision approves."""
    pending = _pending(task)
    return pending is not None and pending.decision == "approved"


def decision_requests_changes(task: Task) -> bool:
    """request_changes: the decision asks for changes, with text."""
    pending = _pending(task)
    return (
        pending is not None
        and pending.decision == "changes_requested"
        and bool(pending.feedback.strip())
    )


def gate_is_for_the_plan(task: Task) -> bool:
    """request_changes: only a plan goes back to its author (the planner)."""
    pending = _pending(task)
    return pending is not None and pending.gate.kind == "plan"


def decider_is_a_person(task: Task) -> bool:
    """Never Codex: its jobs, agents and bot accounts do not decide gates."""
    pending = _pending(task)
    if pending is None:
        return False
    label = pending.decider.label.lower()
    login = pending.decider.login.lower()
    return not label.startswith(CODEX_ACTORS) and not login.endswith("[bot]")


def decider_is_not_the_requester(task: Task) -> bool:
    """Never the requester alone: who asked for the work does not approve it."""
    pending = _pending(task)
    if pending is None:
        return False
    decider = pending.decider
    if (
        decider.user is not None
        and task.requested_by_id is not None
        and decider.user.pk == task.requested_by_id
    ):
        return False
    login = decider.login.lower()
    return not (login and login == (task.requester_login or "").lower())


def decider_may_approve(task: Task) -> bool:
    """The decider has write access (a team role in Codex, write on the forge)."""
    pending = _pending(task)
    return pending is not None and pending.decider.may_approve


def decision_is_on_the_current_subject(task: Task) -> bool:
    """The decision names what the gate waits on now: the plan's version (a
    plan rewritten since the page was loaded is another one) or the pull
    request's head sha. A merge decision may leave the sha out: the merge
    itself is made at the gate's sha (Forge.merge_pull_request)."""
    pending = _pending(task)
    if pending is None:
        return False
    if not pending.subject:
        return pending.gate.kind == "merge"
    return pending.subject == pending.gate.subject


def plan_cycles_remain(task: Task) -> bool:
    """request_changes: plan_cycles < plan_max_cycles."""
    return task.plan_cycles < task.plan_max_cycles


def gate_is_for_a_person(task: Task) -> bool:
    """approve: plans and merges are a person's to approve; a spend cap is
    lifted by raising the cap, not by an approval."""
    pending = _pending(task)
    return pending is not None and pending.gate.kind in ("plan", "merge")


def waits_at_a_spend_cap(task: Task) -> bool:
    """lift_cap: the task waits at a spend gate."""
    return task.gates.open().filter(kind="spend").exists()


def spend_is_under_the_caps(task: Task) -> bool:
    """lift_cap: the repository's and the installation's month spend are
    under their caps again (a cap raised, or a new month)."""
    from codex.tasks.spend_caps import cap_reached

    return cap_reached(task.repository) is None


def waits_for_a_merge(task: Task) -> bool:
    """notice_merge: the task waits at the merge gate."""
    return task.phase == "release" and task.gates.open().filter(kind="merge").exists()


APPROVE_GUARDS = (
    gate_is_open,
    gate_is_for_a_person,
    decision_is_approval,
    decider_is_a_person,
    decider_may_approve,
    decider_is_not_the_requester,
    decision_is_on_the_current_subject,
)
REQUEST_CHANGES_GUARDS = (
    gate_is_open,
    decision_requests_changes,
    gate_is_for_the_plan,
    decider_is_a_person,
    decider_may_approve,
    decision_is_on_the_current_subject,
    plan_cycles_remain,
)

REFUSALS = {
    gate_is_open: "the task is not waiting for this decision any more",
    decision_is_approval: "not an approval",
    decision_requests_changes: "say what should change",
    gate_is_for_a_person: "a spend cap is lifted by raising the cap in the "
    "console, not by an approval",
    gate_is_for_the_plan: "only a plan can be sent back with changes; "
    "request changes on the pull request instead",
    decider_is_a_person: "Codex itself never decides a gate",
    decider_is_not_the_requester: "the requester cannot approve their own request; "
    "someone else with write access must",
    decider_may_approve: "only people with write access decide gates",
    decision_is_on_the_current_subject: "this is not the current version (it "
    "changed since you looked): reload and decide on what is there now",
    plan_cycles_remain: "the plan was sent back the maximum number of times; "
    "approve it or cancel the task",
    spend_is_under_the_caps: "the month's spend is still at a cap: raise the "
    "repository's cap in the console (Repositories) or CODEX_MONTHLY_CAP_USD "
    "first, or wait for next month",
}


def first_refusing(task: Task, guards):
    """The first guard of `guards` that is false for `task`, or None."""
    for guard in guards:
        if not guard(task):
            return guard
    return None
