"""The append-only event log: every transition leaves one entry saying what moved
(field, source, target), who did it (actor) and why (reason), in order."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django_fsm import TransitionNotAllowed

from codex.core.store.refusals import VersionConflict
from codex.events.models import AppendOnlyError, Event, EventKind
from codex.tasks.models import Artifact, Decision, Task
from tests.factories import make_task, put_in_state

pytestmark = pytest.mark.django_db


def story(task: Task) -> list[tuple]:
    return [
        (e.kind, e.field, e.source, e.target, e.actor)
        for e in Event.objects.filter(task=task).in_order()
    ]


@pytest.mark.parametrize(
    ("source", "phase", "action", "kwargs", "field", "target"),
    [
        ("pending", "intake", "start", {}, "status", "in_progress"),
        ("in_progress", "implementation", "pause", {}, "status", "paused"),
        ("in_progress", "implementation", "fail", {}, "status", "failed"),
        ("paused", "implementation", "cancel", {}, "status", "cancelled"),
        (
            "in_progress",
            "implementation",
            "block",
            {"reason": "exit 124", "exit_code": 124},
            "status",
            "blocked",
        ),
    ],
    ids=lambda value: value if isinstance(value, str) else None,
)
def test_each_transition_writes_exactly_one_event(
    source, phase, action, kwargs, field, target
):
    task = put_in_state(make_task(), status=source, phase=phase)
    kwargs = {"reason": f"because {action}", **kwargs}
    before = Event.objects.filter(task=task).count()

    task.perform(action, by="user:carol", **kwargs)

    events = list(Event.objects.filter(task=task).in_order())
    assert len(events) == before + 1
    event = events[-1]
    assert event.kind == EventKind.TRANSITION
    assert (event.field, event.source, event.target) == (field, source, target)
    assert event.actor == "user:carol"
    assert event.reason == kwargs["reason"]
    assert event.data["transition"] == action


def test_phase_transition_event_has_field_phase_and_default_reason():
    task = put_in_state(make_task(), status="in_progress", phase="intake")
    Artifact.store_all(task, {"spec.md": "# Feature"})

    task.perform("begin_planning", by="agent:pm")

    event = Event.objects.filter(task=task).in_order().last()
    assert (event.field, event.source, event.target) == ("phase", "intake", "planning")
    assert event.actor == "agent:pm"
    assert event.reason == "spec.md written"


def test_block_event_carries_the_retry_delay():
    task = put_in_state(make_task(), status="in_progress", phase="implementation")
    task.perform(
        "block",
        by="worker:1",
        reason="429",
        retry_after=timedelta(seconds=90),
        exit_code=124,
    )
    event = Event.objects.filter(task=task).in_order().last()
    assert event.data["retry_after_seconds"] == 90


def test_a_tasks_events_in_order_tell_its_story():
    task = make_task()
    task.perform("start", by="worker:1")
    Artifact.store_all(task, {"spec.md": "# Feature"})
    task.perform("begin_planning", by="agent:pm")
    task.perform("pause", by="user:alice", reason="holiday")
    task.perform("resume", by="user:alice")
    task.perform("escalate", by="agent:planner", reason="unclear", questions=["?"])
    task.resolve_escalation(
        task.escalations.get(), decision=Decision.CANCEL, by="user:bob"
    )

    assert story(task) == [
        ("created", "", "", "pending", "intake:api"),
        ("transition", "status", "pending", "in_progress", "worker:1"),
        ("transition", "phase", "intake", "planning", "agent:pm"),
        ("transition", "status", "in_progress", "paused", "user:alice"),
        ("transition", "status", "paused", "in_progress", "user:alice"),
        ("transition", "status", "in_progress", "escalated", "agent:planner"),
        ("transition", "status", "escalated", "cancelled", "user:bob"),
    ]
    escalate = Event.objects.filter(task=task, target="escalated").get()
    assert escalate.data["questions"] == ["?"]
    assert escalate.reason == "unclear"


def test_refused_transition_writes_no_event():
    task = put_in_state(make_task(), status="paused", phase="implementation")
    before = story(task)

    with pytest.raises(TransitionNotAllowed):
        task.perform("complete", by="user:alice")
    with pytest.raises(TransitionNotAllowed):
        task.block(by="user:alice", reason="x")

    assert story(task) == before


def test_version_conflict_writes_no_event_and_keeps_the_row():
    task = put_in_state(make_task(), status="in_progress", phase="implementation")
    before = story(task)
    with task.leased("worker:1"):
        put_in_state(Task.objects.get(pk=task.pk), branch="moved-on")
        moved = Task.objects.get(pk=task.pk).version
        task.pause(by="worker:1")
        with pytest.raises(VersionConflict):
            task.save(release_lease=True)

    row = Task.objects.get(pk=task.pk)
    assert row.status == "in_progress"
    assert row.version >= moved
    assert story(task) == before


def test_events_cannot_be_changed():
    task = make_task()
    event = Event.objects.get(task=task)
    event.reason = "rewritten history"
    with pytest.raises(AppendOnlyError):
        event.save()
    with pytest.raises(AppendOnlyError):
        Event.objects.filter(task=task).update(reason="rewritten")
    assert Event.objects.get(pk=event.pk).reason == "task created"


def test_events_cannot_be_deleted():
    task = make_task()
    event = Event.objects.get(task=task)
    with pytest.raises(AppendOnlyError):
        event.delete()
    with pytest.raises(AppendOnlyError):
        Event.objects.filter(task=task).delete()
    with pytest.raises(AppendOnlyError):
        Event.objects.all().delete()
    assert Event.objects.filter(pk=event.pk).exists()
