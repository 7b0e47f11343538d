"""Escalation resolution, spec 002 §3.4: escalated → in_progress when a
"Resolution provided, task not stale" — "NOT idempotent: Resolution consumed on
first transition"; §3.5 "Escalate to human: one-time state change, subsequent
calls rejected".
"""

from __future__ import annotations

import pytest
from django.db import IntegrityError, transaction
from django_fsm import TransitionNotAllowed

from codex.events.models import EventKind
from codex.tasks.models import AlreadyResolved, Decision, Escalation, Task
from tests.factories import make_task, make_user, put_in_state

pytestmark = pytest.mark.django_db


def escalated_task(phase: str = "verification") -> tuple[Task, Escalation]:
    task = put_in_state(make_task(), status="in_progress", phase=phase)
    task.perform(
        "escalate",
        by="agent:qa",
        reason="verification cycles exhausted",
        questions=["Ship without the flaky test?", "Who owns CI?"],
        code="verification_max_cycles",
    )
    return task, task.escalations.get()


def state(task: Task) -> tuple:
    row = Task.objects.get(pk=task.pk)
    return (row.status, row.phase, row.version, row.lease_holder)


def test_escalate_opens_one_escalation_with_the_questions():
    task, escalation = escalated_task()
    assert escalation.is_open
    assert escalation.phase == "verification"
    assert escalation.questions == ["Ship without the flaky test?", "Who owns CI?"]
    assert escalation.detail == "verification cycles exhausted"
    assert Task.objects.get(pk=task.pk).status == "escalated"


def test_resume_stores_answers_and_resolver_and_consumes_the_resolution():
    task, escalation = escalated_task()
    alice = make_user("alice")

    task.resolve_escalation(
        escalation,
        decision=Decision.RESUME,
        by="user:alice",
        resolution="ship it",
        answers=["yes", "platform team"],
        user=alice,
    )

    escalation.refresh_from_db()
    assert escalation.resolved_at is not None
    assert escalation.consumed_at is not None
    assert escalation.decision == Decision.RESUME
    assert escalation.resolution == "ship it"
    assert escalation.answers == ["yes", "platform team"]
    assert escalation.resolved_by == alice
    assert escalation.resolved_by_label == "user:alice"
    assert state(task)[:2] == ("in_progress", "verification")
    event = task.events.filter(kind=EventKind.TRANSITION).in_order().last()
    assert (event.source, event.target, event.actor, event.reason) == (
        "escalated",
        "in_progress",
        "user:alice",
        "ship it",
    )


def test_second_resolution_raises_already_resolved_and_writes_nothing():
    task, escalation = escalated_task()
    task.resolve_escalation(
        escalation, decision=Decision.RESUME, by="user:alice", resolution="first"
    )
    before_task = state(task)
    before_events = task.events.count()
    again = Escalation.objects.get(pk=escalation.pk)

    with pytest.raises(AlreadyResolved):
        task.resolve_escalation(
            again, decision=Decision.FAIL, by="user:bob", resolution="second"
        )

    escalation.refresh_from_db()
    assert escalation.decision == Decision.RESUME
    assert escalation.resolution == "first"
    assert escalation.resolved_by_label == "user:alice"
    assert state(task) == before_task
    assert task.events.count() == before_events


def test_second_resolution_through_a_stale_copy_is_also_refused():
    """Two people answer at once: the second one's UPDATE matches nothing."""
    task, escalation = escalated_task()
    other_task = Task.objects.get(pk=task.pk)
    other_escalation = Escalation.objects.get(pk=escalation.pk)
    task.resolve_escalation(escalation, decision=Decision.CANCEL, by="user:alice")

    with pytest.raises(AlreadyResolved):
        other_task.resolve_escalation(
            other_escalation, decision=Decision.RESUME, by="user:bob"
        )

    assert Task.objects.get(pk=task.pk).status == "cancelled"
    assert Escalation.objects.get(pk=escalation.pk).decision == Decision.CANCEL


@pytest.mark.parametrize(
    ("decision", "status"),
    [(Decision.FAIL, "failed"), (Decision.CANCEL, "cancelled")],
)
def test_fail_and_cancel_decisions_end_the_task(decision, status):
    task, escalation = escalated_task()

    task.resolve_escalation(
        escalation, decision=decision, by="user:alice", resolution="give up"
    )

    row = Task.objects.get(pk=task.pk)
    assert row.status == status
    assert row.finished_at is not None
    assert row.lease_holder is None
    escalation.refresh_from_db()
    assert escalation.decision == decision
    assert escalation.consumed_at is not None
    assert not row.escalations.open().exists()


def test_unknown_decision_is_refused_and_nothing_changes():
    task, escalation = escalated_task()
    before = state(task)
    with pytest.raises(ValueError):
        task.resolve_escalation(escalation, decision="ignore", by="user:alice")
    assert state(task) == before
    assert Escalation.objects.get(pk=escalation.pk).is_open


def test_resolution_of_a_task_no_longer_escalated_is_refused():
    """Failing an escalated task closes its escalation with it, so a late answer
    is refused and changes nothing."""
    task, escalation = escalated_task()
    Task.objects.get(pk=task.pk).perform("fail", by="worker:recovery")
    task.refresh_from_db()
    before = state(task)
    events = task.events.count()

    with pytest.raises((TransitionNotAllowed, AlreadyResolved)):
        task.resolve_escalation(escalation, decision=Decision.RESUME, by="user:alice")

    assert state(task) == before
    assert task.status == "failed"
    assert task.events.count() == events
    escalation.refresh_from_db()
    assert escalation.resolution == "task failed"
    assert escalation.resolved_by_label == "worker:recovery"


def test_a_cancelled_resolution_leaves_the_escalation_open_when_the_task_moved():
    """A task forced out of `escalated` (by an operator's repair) refuses the
    resolution, and the rolled-back resolution leaves the escalation open."""
    task, escalation = escalated_task()
    put_in_state(task, status="paused")
    before = state(task)

    with pytest.raises(TransitionNotAllowed):
        task.resolve_escalation(escalation, decision=Decision.RESUME, by="user:alice")

    assert state(task)[0] == before[0] == "paused"
    escalation.refresh_from_db()
    assert escalation.is_open
    assert escalation.decision == ""


def test_stale_task_object_cannot_resume_a_failed_task():
    """An object read while the task was escalated cannot revive it after another
    process failed it (§3.5: writes check what is current, not what was read)."""
    task, escalation = escalated_task()
    Task.objects.get(pk=task.pk).perform("fail", by="worker:recovery")

    with pytest.raises((TransitionNotAllowed, AlreadyResolved)):
        task.resolve_escalation(escalation, decision=Decision.RESUME, by="user:alice")

    assert Task.objects.get(pk=task.pk).status == "failed"


def test_resolution_must_belong_to_the_task():
    task, _ = escalated_task()
    _, foreign = escalated_task()
    with pytest.raises(ValueError):
        task.resolve_escalation(foreign, decision=Decision.RESUME, by="user:alice")
    assert foreign.is_open
    assert Escalation.objects.get(pk=foreign.pk).is_open


def test_at_most_one_open_escalation_per_task():
    task, escalation = escalated_task()
    with pytest.raises(IntegrityError), transaction.atomic():
        Escalation.objects.create(
            task=task, phase="verification", reason="manual_review"
        )
    assert task.escalations.open().count() == 1


def test_a_new_escalation_may_open_once_the_previous_is_resolved():
    task, first = escalated_task()
    task.resolve_escalation(first, decision=Decision.RESUME, by="user:alice")
    task.perform("escalate", by="agent:qa", reason="again")
    assert task.escalations.count() == 2
    assert task.escalations.open().count() == 1
    assert Task.objects.get(pk=task.pk).status == "escalated"
