"""Plan approval (docs/gates.md): after planning, a task that asks for it (or
whose repository's policy does) is escalated with a plan_approval escalation
until a person with write access, other than the requester, approves the
current plan; changes
requested go back to the planner, counted like the other feedback loops."""

from __future__ import annotations

import pytest

from codex.tasks.models import Decider, GateDecision, GateRefused
from codex.tasks.models.gates import plan_version
from tests.factories import make_repository, make_task, make_user, put_in_state
from tests.pipeline.helpers import run_steps, transitions

pytestmark = pytest.mark.django_db


def approver(user) -> Decider:
    return Decider(label=f"user:{user.username}", user=user, may_approve=True)


@pytest.fixture
def requester():
    return make_user("rita", role="team")


@pytest.fixture
def alice():
    return make_user("alice", role="team")


@pytest.fixture
def waiting(scripted_runner, requester):
    task = make_task(plan_approval_required=True, requested_by=requester)
    run_steps(task)
    return task


def test_it_waits_after_planning_with_the_plan_version(waiting):
    assert (waiting.status, waiting.phase) == ("escalated", "planning")
    gate = waiting.open_gate
    assert gate.kind == "plan" and gate.subject == plan_version(waiting)
    assert "approval" in gate.reason
    assert transitions(waiting, "status")[-1] == ("in_progress", "escalated")
    # The gate's own escalation, open, in the phase it waits in.
    escalation = waiting.escalations.open().get()
    assert (escalation.reason, escalation.phase) == ("plan_approval", "planning")
    assert gate.escalation == escalation


def test_the_repositorys_policy_asks_for_it_too(scripted_runner):
    task = make_task(make_repository(plan_approval=True))
    run_steps(task)
    assert task.status == "escalated"


def test_without_a_gate_planning_goes_straight_on(scripted_runner):
    task = make_task()
    run_steps(task)
    assert task.status == "completed"
    assert not task.gates.exists()


def test_an_approval_moves_on_to_implementation_and_logs_who(
    waiting, alice, scripted_runner
):
    waiting.decide_gate(
        GateDecision.APPROVED,
        decider=approver(alice),
        subject=waiting.open_gate.subject,
    )
    waiting.refresh_from_db()
    assert (waiting.status, waiting.phase) == ("in_progress", "implementation")
    gate = waiting.gates.get()
    assert (gate.decision, gate.decided_by, gate.decided_by_user) == (
        "approved",
        "user:alice",
        alice,
    )
    assert gate.decided_at is not None
    # Its escalation is answered with it, once.
    escalation = gate.escalation
    assert (escalation.decision, escalation.resolved_by_label) == (
        "approve",
        "user:alice",
    )
    assert escalation.consumed_at == escalation.resolved_at == gate.decided_at
    event = waiting.events.filter(kind="control", actor="user:alice").get()
    assert event.data["decision"] == "approved" and event.data["gate"] == "plan"
    # The planner is not run again: the approved plan is the one implemented.
    scripted_runner.calls.clear()
    run_steps(waiting)
    assert waiting.status == "completed"
    assert "planning" not in [phase for _, phase in scripted_runner.calls]


def test_the_requester_alone_cannot_approve(waiting, requester):
    with pytest.raises(GateRefused, match="requester") as refused:
        waiting.decide_gate(
            GateDecision.APPROVED,
            decider=approver(requester),
            subject=waiting.open_gate.subject,
        )
    assert refused.value.is_about_the_person
    waiting.refresh_from_db()
    assert waiting.status == "escalated"
    assert waiting.open_gate is not None


def test_codex_itself_cannot_approve(waiting):
    with pytest.raises(GateRefused, match="Codex"):
        waiting.decide_gate(
            GateDecision.APPROVED,
            decider=Decider(label="system:pipeline", may_approve=True),
            subject=waiting.open_gate.subject,
        )


def test_someone_without_write_access_cannot_approve(waiting):
    outsider = make_user("olga", role="integrator")
    with pytest.raises(GateRefused, match="write access"):
        waiting.decide_gate(
            GateDecision.APPROVED,
            decider=Decider(label="user:olga", user=outsider, may_approve=False),
            subject=waiting.open_gate.subject,
        )


def test_a_stale_plan_cannot_be_approved(waiting, alice):
    with pytest.raises(GateRefused, match="not the current version"):
        waiting.decide_gate(
            GateDecision.APPROVED, decider=approver(alice), subject="0123456789abcdef"
        )
    waiting.refresh_from_db()
    assert waiting.status == "escalated"


def test_changes_go_back_to_the_planner_as_counted_feedback(
    waiting, alice, scripted_runner
):
    waiting.decide_gate(
        GateDecision.CHANGES_REQUESTED,
        decider=approver(alice),
        subject=waiting.open_gate.subject,
        feedback="Split task 2 into a migration and a view.",
    )
    waiting.refresh_from_db()
    assert (waiting.status, waiting.phase) == ("in_progress", "planning")
    assert waiting.plan_cycles == 1
    [entry] = waiting.feedback_history["plan"]
    assert entry["feedback"] == {"message": "Split task 2 into a migration and a view."}
    assert entry["by"] == "user:alice"
    # The planner runs again and the new plan waits at a new gate.
    scripted_runner.calls.clear()
    run_steps(waiting)
    assert waiting.status == "escalated"
    assert [phase for _, phase in scripted_runner.calls] == ["planning"]
    assert waiting.gates.count() == 2


def test_changes_need_text(waiting, alice):
    with pytest.raises(GateRefused, match="say what should change"):
        waiting.decide_gate(
            GateDecision.CHANGES_REQUESTED,
            decider=approver(alice),
            subject=waiting.open_gate.subject,
            feedback="  ",
        )


def test_past_the_plan_loop_limit_only_approval_or_cancel_remain(waiting, alice):
    put_in_state(waiting, plan_cycles=waiting.plan_max_cycles)
    with pytest.raises(GateRefused, match="maximum"):
        waiting.decide_gate(
            GateDecision.CHANGES_REQUESTED,
            decider=approver(alice),
            subject=waiting.open_gate.subject,
            feedback="Again.",
        )
    waiting.perform("cancel", by="user:alice")
    assert waiting.status == "cancelled"
    assert waiting.gates.get().decision == "withdrawn"
