"""The phase machine of spec 002 §3.3 and §3.4 ("Phase Transitions").

| From Phase     | To Phase       | Guard (ALL must be true)                       |
| intake         | planning       | spec.md exists AND needs_clarification = false |
| planning       | implementation | plan.md AND tasks.md exist AND task_count > 0  |
| implementation | verification   | current_task = total_tasks AND PR AND CI pass  |
| verification   | review         | recommendation = "approve"                     |
| verification   | implementation | "request_changes" AND cycle_count < 3          |
| review         | release        | assessment = "approve" AND no blocking comments|
| review         | implementation | "request_changes" AND cycle_count < 2          |
"""

from __future__ import annotations

import pytest
from django.db import IntegrityError, transaction
from django_fsm import TransitionNotAllowed

from codex.events.models import EventKind
from codex.tasks.models import (
    Artifact,
    EscalationReason,
    ReviewReport,
    Task,
    VerificationReport,
)
from tests.factories import make_task, put_in_state

pytestmark = pytest.mark.django_db

PR_URL = "https://github.com/acme/repo/pull/7"
BLOCKING = {"id": 1, "severity": "blocking", "issue": "SQL injection"}
SUGGESTION = {"id": 2, "severity": "suggestion", "issue": "naming"}

# edge name → (source phase, target phase)
EDGES = {
    "begin_planning": ("intake", "planning"),
    "begin_implementation": ("planning", "implementation"),
    "begin_verification": ("implementation", "verification"),
    "begin_review": ("verification", "review"),
    "return_from_verification": ("verification", "implementation"),
    "begin_release": ("review", "release"),
    "return_from_review": ("review", "implementation"),
}


def prepare(edge: str, broken: str | None = None, status: str = "in_progress"):
    """A task at the source phase of `edge` with every guard true but `broken`."""
    source, _ = EDGES[edge]
    task = make_task()
    fields: dict = {}
    if edge == "begin_planning":
        if broken != "spec":
            Artifact.store_all(task, {"spec.md": "# Feature: login"})
        fields["needs_clarification"] = broken == "clarification"
    elif edge == "begin_implementation":
        if broken != "plan":
            Artifact.store_all(task, {"plan.md": "# Plan"})
        if broken != "tasks":
            Artifact.store_all(task, {"tasks.md": "- [ ] T1"})
        fields["total_tasks"] = 0 if broken == "task_count" else 3
    elif edge == "begin_verification":
        fields["total_tasks"] = 3
        fields["current_task"] = 2 if broken == "current_task" else 3
        fields["pr_url"] = "" if broken == "pr" else PR_URL
        fields["ci_passing"] = {"ci_failing": False, "ci_unknown": None}.get(
            broken, True
        )
    elif edge in ("begin_review", "return_from_verification"):
        wanted = "approve" if edge == "begin_review" else "request_changes"
        other = "request_changes" if edge == "begin_review" else "approve"
        # Report 3 is the last: its request for changes escalates.
        cycles = 2 if broken == "cycles" else 0
        fields["verification_cycles"] = cycles
        if broken == "stale_report":
            # Only the previous cycle's report exists.
            fields["verification_cycles"] = 1
            VerificationReport.objects.create(task=task, cycle=1, recommendation=wanted)
        elif broken != "no_report":
            VerificationReport.objects.create(
                task=task,
                cycle=cycles + 1,
                recommendation=other if broken == "recommendation" else wanted,
            )
    elif edge in ("begin_release", "return_from_review"):
        wanted = "approve" if edge == "begin_release" else "request_changes"
        other = "request_changes" if edge == "begin_release" else "approve"
        cycles = 1 if broken == "cycles" else 0  # report 2 is the last
        fields["review_cycles"] = cycles
        if broken != "no_report":
            ReviewReport.objects.create(
                task=task,
                cycle=cycles + 1,
                assessment=other if broken == "assessment" else wanted,
                comments=[SUGGESTION, BLOCKING] if broken == "blocking" else [],
            )
    return put_in_state(task, status=status, phase=source, **fields)


def snapshot(task: Task) -> tuple:
    row = Task.objects.get(pk=task.pk)
    return (
        row.status,
        row.phase,
        row.version,
        row.verification_cycles,
        row.review_cycles,
    )


@pytest.mark.parametrize(
    "edge", [pytest.param(e, id=f"{s}->{t}:{e}") for e, (s, t) in EDGES.items()]
)
def test_every_allowed_phase_edge_succeeds(edge):
    source, target = EDGES[edge]
    task = prepare(edge)

    task.perform(edge, by="agent:test")

    row = Task.objects.get(pk=task.pk)
    assert row.phase == target
    assert row.status == "in_progress", "phase edges keep the status"
    event = task.events.filter(kind=EventKind.TRANSITION).in_order().last()
    assert (event.field, event.source, event.target) == ("phase", source, target)
    assert row.phase_progress[target]["status"] == "in_progress"


def test_begin_planning_marks_intake_completed_and_hands_to_planner():
    task = prepare("begin_planning")
    task.perform("begin_planning", by="agent:pm")
    row = Task.objects.get(pk=task.pk)
    assert row.phase_progress["intake"]["status"] == "completed"
    assert row.current_agent == "dev"  # the envelope's enum has no planner


def test_begin_implementation_initialises_the_task_counter():
    """§3.4 side effect: "Task counter initialized"."""
    task = prepare("begin_implementation")
    put_in_state(task, current_task=2)
    task.perform("begin_implementation", by="agent:planner")
    row = Task.objects.get(pk=task.pk)
    assert row.current_task == 0
    assert row.total_tasks == 3
    assert row.current_agent == "dev"


@pytest.mark.parametrize(
    ("edge", "loop", "counter"),
    [
        ("return_from_verification", "verification", "verification_cycles"),
        ("return_from_review", "review", "review_cycles"),
    ],
)
def test_returns_route_feedback_and_increment_the_counter(edge, loop, counter):
    """§3.4 side effect: "Feedback routed to Dev, counter++"."""
    task = prepare(edge)
    feedback = {"summary": "fix the failing login test"}

    task.perform(edge, by="agent:qa", feedback=feedback)

    row = Task.objects.get(pk=task.pk)
    assert getattr(row, counter) == 1
    assert row.feedback_history[loop][-1]["cycle"] == 1
    assert row.feedback_history[loop][-1]["feedback"] == feedback
    assert row.current_agent == "dev"
    assert row.ci_passing is None, "CI must pass again after the changes"


GUARD_BREAKS = [
    ("begin_planning", "spec"),
    ("begin_planning", "clarification"),
    ("begin_implementation", "plan"),
    ("begin_implementation", "tasks"),
    ("begin_implementation", "task_count"),
    ("begin_verification", "current_task"),
    ("begin_verification", "pr"),
    ("begin_verification", "ci_failing"),
    ("begin_verification", "ci_unknown"),
    ("begin_review", "recommendation"),
    ("begin_review", "no_report"),
    ("begin_review", "stale_report"),
    ("return_from_verification", "recommendation"),
    ("return_from_verification", "no_report"),
    ("return_from_verification", "cycles"),
    ("begin_release", "assessment"),
    ("begin_release", "blocking"),
    ("begin_release", "no_report"),
    ("return_from_review", "assessment"),
    ("return_from_review", "no_report"),
    ("return_from_review", "cycles"),
]


@pytest.mark.parametrize(
    ("edge", "broken"),
    [pytest.param(*row, id=f"{row[0]}-{row[1]}") for row in GUARD_BREAKS],
)
def test_each_guard_alone_refuses_the_edge(edge, broken):
    task = prepare(edge, broken=broken)
    before = snapshot(task)
    events = task.events.count()

    with pytest.raises(TransitionNotAllowed):
        getattr(task, edge)(by="agent:test")

    assert task.phase == EDGES[edge][0]
    assert snapshot(task) == before
    assert task.events.count() == events


@pytest.mark.parametrize(
    "status", ["pending", "blocked", "escalated", "paused", "completed", "failed"]
)
@pytest.mark.parametrize("edge", list(EDGES))
def test_phase_edges_need_status_in_progress(edge, status):
    task = prepare(edge, status=status)
    before = snapshot(task)
    with pytest.raises(TransitionNotAllowed):
        getattr(task, edge)(by="agent:test")
    assert snapshot(task) == before


# (id, phase, method whose guards are satisfied by `prepare`)
NOT_IN_TABLE = [
    ("intake->implementation", "intake", "begin_implementation"),
    ("intake->verification", "intake", "begin_verification"),
    ("planning->review", "planning", "begin_review"),
    ("planning->release", "planning", "begin_release"),
    ("implementation->review", "implementation", "begin_review"),
    ("review->verification", "review", "begin_verification"),
    ("verification->release", "verification", "begin_release"),
    *[(f"release->{edge}", "release", edge) for edge in EDGES],
]


@pytest.mark.parametrize(
    ("phase", "edge"), [pytest.param(*row[1:], id=row[0]) for row in NOT_IN_TABLE]
)
def test_phase_moves_not_in_the_table_raise(phase, edge):
    task = prepare(edge)  # the edge's own guards are all true ...
    put_in_state(task, phase=phase)  # ... but the task is in another phase
    before = snapshot(task)
    with pytest.raises(TransitionNotAllowed):
        getattr(task, edge)(by="agent:test")
    assert snapshot(task) == before


def test_direct_assignment_of_phase_is_refused():
    task = make_task()
    with pytest.raises(AttributeError):
        task.phase = "release"
    assert Task.objects.get(pk=task.pk).phase == "intake"


# -- feedback-loop limits (§3.3: cycle < 3 / cycle >= 3, cycle < 2 / >= 2) -------


def _back_to_verification(task: Task) -> None:
    put_in_state(task, total_tasks=3, current_task=3, pr_url=PR_URL, ci_passing=True)
    task.perform("begin_verification", by="agent:dev")


def test_verification_returns_twice_and_its_third_report_escalates():
    """Spec 002 §5.1 keeps agent-verification/{task_id}/report-1.yml to
    report-3.yml: the third report that requests changes escalates."""
    task = prepare("begin_verification")
    task.perform("begin_verification", by="agent:dev")

    for cycle in (1, 2):
        VerificationReport.objects.create(
            task=task, cycle=cycle, recommendation="request_changes"
        )
        task.perform("return_from_verification", by="agent:qa")
        assert Task.objects.get(pk=task.pk).verification_cycles == cycle
        _back_to_verification(task)

    VerificationReport.objects.create(
        task=task, cycle=3, recommendation="request_changes"
    )
    before = snapshot(task)
    with pytest.raises(TransitionNotAllowed):
        task.return_from_verification(by="agent:qa")
    assert snapshot(task) == before
    assert before[1] == "verification"
    assert before[3] == 2

    # §3.4: verification → (escalated) at the limit; the phase stays.
    task.perform(
        "escalate",
        by="agent:qa",
        reason="verification cycles exhausted",
        code=EscalationReason.VERIFICATION_LIMIT,
    )
    row = Task.objects.get(pk=task.pk)
    assert (row.status, row.phase) == ("escalated", "verification")
    escalation = row.escalations.get()
    assert escalation.phase == "verification"
    assert escalation.reason == EscalationReason.VERIFICATION_LIMIT


def test_review_returns_once_and_its_second_report_escalates():
    """Spec 002 §5.1 keeps agent-review/{task_id}/report-1.yml and
    report-2.yml: the second report that requests changes escalates."""
    task = prepare("return_from_review")  # review, cycle 0, report 1 requests changes
    task.perform("return_from_review", by="agent:reviewer")
    assert Task.objects.get(pk=task.pk).review_cycles == 1

    put_in_state(task, phase="review")
    ReviewReport.objects.create(
        task=task, cycle=2, assessment="request_changes", comments=[BLOCKING]
    )
    before = snapshot(task)
    with pytest.raises(TransitionNotAllowed):
        task.return_from_review(by="agent:reviewer")
    assert snapshot(task) == before

    task.perform(
        "escalate",
        by="agent:reviewer",
        reason="review cycles exhausted",
        code=EscalationReason.REVIEW_LIMIT,
    )
    row = Task.objects.get(pk=task.pk)
    assert (row.status, row.phase, row.review_cycles) == ("escalated", "review", 1)


def test_intake_needing_clarification_escalates_in_intake():
    """§3.4: intake → (escalated) when needs_clarification = true."""
    task = prepare("begin_planning", broken="clarification")
    task.perform(
        "escalate",
        by="agent:pm",
        reason="unclear request",
        questions=["Which login providers?"],
        code=EscalationReason.NEEDS_CLARIFICATION,
    )
    row = Task.objects.get(pk=task.pk)
    assert (row.status, row.phase) == ("escalated", "intake")
    assert row.escalations.get().questions == ["Which login providers?"]


@pytest.mark.parametrize(
    "fields",
    [
        pytest.param({"verification_cycles": 4}, id="verification_cycles>max"),
        pytest.param({"review_cycles": 3}, id="review_cycles>max"),
        pytest.param({"total_tasks": 2, "current_task": 3}, id="current_task>total"),
    ],
)
def test_check_constraints_keep_counters_within_limits(fields):
    """§2.2: cycle_count is 0 to max_cycles; current_task 1 to total_tasks."""
    task = make_task()
    with pytest.raises(IntegrityError), transaction.atomic():
        put_in_state(task, **fields)
    row = Task.objects.get(pk=task.pk)
    assert (row.verification_cycles, row.review_cycles, row.current_task) == (0, 0, 0)


def test_check_constraints_allow_exactly_the_max():
    task = put_in_state(make_task(), verification_cycles=3, review_cycles=2)
    assert (task.verification_cycles, task.review_cycles) == (3, 2)
