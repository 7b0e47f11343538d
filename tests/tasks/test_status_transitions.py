"""The status machine of spec 002 §3.2 and §3.4 ("Status Transitions").

§3.2 Next Possible States:
    pending → in_progress; in_progress → blocked, escalated, paused, completed,
    failed; blocked → in_progress, failed; escalated → in_progress, failed,
    cancelled; paused → in_progress, cancelled; completed, failed, cancelled are
    terminal. §3.4 adds `* → cancelled` ("task not completed") and the guards.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
import time_machine
from django.conf import settings
from django.utils import timezone
from django_fsm import TransitionNotAllowed

from codex.core.store.refusals import LeaseRequired, LeaseUnavailable, VersionConflict
from codex.events.models import Event, EventKind
from codex.tasks.models import Decision, Escalation, Task
from tests.factories import make_task, put_in_state

pytestmark = pytest.mark.django_db


def snapshot(task: Task) -> tuple:
    row = Task.objects.get(pk=task.pk)
    return (row.status, row.phase, row.version, row.lease_holder)


def transition_events(task: Task) -> list[tuple[str, str, str]]:
    return [
        (e.field, e.source, e.target)
        for e in task.events.filter(kind=EventKind.TRANSITION).in_order()
    ]


def escalated_task(**fields) -> Task:
    task = put_in_state(make_task(), status="in_progress", phase="review", **fields)
    task.perform("escalate", by="test", reason="needs a person", questions=["Why?"])
    return task


# (id, start status, phase, extra fields, action, kwargs, expected status)
ALLOWED = [
    ("pending->in_progress:start", "pending", "intake", {}, "start", {}, "in_progress"),
    (
        "in_progress->blocked:block",
        "in_progress",
        "implementation",
        {},
        "block",
        {"reason": "exit code 124", "exit_code": 124},
        "blocked",
    ),
    (
        "blocked->in_progress:unblock",
        "blocked",
        "implementation",
        {},
        "unblock",
        {},
        "in_progress",
    ),
    (
        "in_progress->escalated:escalate",
        "in_progress",
        "verification",
        {},
        "escalate",
        {"reason": "security issue"},
        "escalated",
    ),
    (
        "in_progress->paused:pause",
        "in_progress",
        "planning",
        {},
        "pause",
        {},
        "paused",
    ),
    (
        "paused->in_progress:resume",
        "paused",
        "planning",
        {},
        "resume",
        {},
        "in_progress",
    ),
    (
        "in_progress->completed:complete",
        "in_progress",
        "release",
        {"pr_merged": True},
        "complete",
        {},
        "completed",
    ),
    *[
        (
            f"{source}->failed:fail",
            source,
            "implementation",
            {},
            "fail",
            {"reason": "unrecoverable"},
            "failed",
        )
        for source in ("in_progress", "blocked", "escalated")
    ],
    *[
        (
            f"{source}->cancelled:cancel",
            source,
            "intake" if source == "pending" else "implementation",
            {},
            "cancel",
            {},
            "cancelled",
        )
        for source in ("pending", "in_progress", "blocked", "escalated", "paused")
    ],
]


@pytest.mark.parametrize(
    ("source", "phase", "fields", "action", "kwargs", "target"),
    [pytest.param(*row[1:], id=row[0]) for row in ALLOWED],
)
def test_every_allowed_status_row_succeeds(
    source, phase, fields, action, kwargs, target
):
    task = put_in_state(make_task(), status=source, phase=phase, **fields)
    version = task.version

    task.perform(action, by="test", **kwargs)

    row = Task.objects.get(pk=task.pk)
    assert row.status == target
    assert row.phase == phase, "a status transition never moves the phase"
    assert row.version > version
    assert row.lease_holder is None, "perform() releases the lease"
    assert transition_events(task)[-1] == ("status", source, target)


def test_escalated_to_in_progress_through_resolve_escalation():
    """§3.4: escalated → in_progress when "Resolution provided"."""
    task = escalated_task()
    escalation = task.escalations.get()

    task.resolve_escalation(escalation, decision=Decision.RESUME, by="user:alice")

    row = Task.objects.get(pk=task.pk)
    assert (row.status, row.phase) == ("in_progress", "review")
    escalation.refresh_from_db()
    assert escalation.consumed_at is not None
    assert transition_events(task)[-1] == ("status", "escalated", "in_progress")


def test_resolve_without_a_resolution_is_refused():
    """§3.4 guard of escalated → in_progress: a resolution was provided."""
    task = escalated_task()
    before = snapshot(task)

    with pytest.raises(TransitionNotAllowed):
        task.resolve(by="test")

    assert snapshot(task) == before


def test_block_records_retry_and_backoff():
    """§3.4: in_progress → blocked, "retry counter incremented"."""
    task = put_in_state(make_task(), status="in_progress", phase="implementation")
    with time_machine.travel(timezone.now(), tick=False):
        task.perform(
            "block",
            by="test",
            reason="exit 23",
            retry_after=timedelta(minutes=5),
            exit_code=23,
        )
        expected_until = timezone.now() + timedelta(minutes=5)

    row = Task.objects.get(pk=task.pk)
    assert row.retry_count == 1
    assert row.blocked_reason == "exit 23"
    assert row.blocked_until == expected_until


def test_terminal_transitions_stamp_finished_at():
    task = put_in_state(make_task(), status="in_progress", phase="implementation")
    assert task.finished_at is None
    task.perform("fail", by="test")
    assert Task.objects.get(pk=task.pk).finished_at is not None


def test_cancel_closes_the_open_escalation():
    task = escalated_task()
    task.perform("cancel", by="user:bob")
    escalation = Escalation.objects.get(task=task)
    assert escalation.resolved_at is not None
    assert escalation.decision == Decision.CANCEL


# (id, start status, phase, action)
DISALLOWED = [
    ("pending->paused", "pending", "intake", "pause"),
    ("pending->blocked", "pending", "intake", "block"),
    ("pending->completed", "pending", "release", "complete"),
    ("pending->failed", "pending", "intake", "fail"),
    ("paused->blocked", "paused", "implementation", "block"),
    ("paused->escalated", "paused", "implementation", "escalate"),
    ("paused->failed", "paused", "implementation", "fail"),
    ("blocked->paused", "blocked", "implementation", "pause"),
    ("blocked->escalated", "blocked", "implementation", "escalate"),
    ("escalated->paused", "escalated", "implementation", "pause"),
    ("escalated->in_progress:resume", "escalated", "implementation", "resume"),
    ("in_progress->in_progress:start", "in_progress", "intake", "start"),
    *[
        (f"{terminal}->cancelled", terminal, "release", "cancel")
        for terminal in ("completed", "failed", "cancelled")
    ],
    ("completed->failed", "completed", "release", "fail"),
    ("completed->in_progress:resume", "completed", "release", "resume"),
    ("failed->in_progress:unblock", "failed", "implementation", "unblock"),
    ("failed->in_progress:resume", "failed", "implementation", "resume"),
    ("failed->in_progress:start", "failed", "intake", "start"),
    ("cancelled->in_progress:resume", "cancelled", "intake", "resume"),
]


@pytest.mark.parametrize(
    ("source", "phase", "action"),
    [pytest.param(*row[1:], id=row[0]) for row in DISALLOWED],
)
def test_disallowed_status_moves_raise_and_write_nothing(source, phase, action):
    task = put_in_state(make_task(), status=source, phase=phase, pr_merged=True)
    before = snapshot(task)
    events = task.events.count()

    with pytest.raises(TransitionNotAllowed):
        getattr(task, action)(by="test", reason="not allowed")

    assert task.status == source, "the in-memory object is not changed either"
    assert snapshot(task) == before
    assert task.events.count() == events


@pytest.mark.parametrize(
    ("source", "action"),
    [
        ("pending", "pause"),
        ("completed", "cancel"),
        ("failed", "resume"),
        ("paused", "block"),
    ],
)
def test_refused_perform_leaves_state_and_lease_free(source, action):
    """perform() takes the lease first; a refusal must give it back."""
    task = put_in_state(make_task(), status=source)
    events = task.events.count()

    with pytest.raises(TransitionNotAllowed):
        task.perform(action, by="test", reason="x")

    row = Task.objects.get(pk=task.pk)
    assert (row.status, row.phase) == (source, "intake")
    assert row.lease_holder is None
    assert task.held_lease is None
    assert task.events.count() == events


# -- guards (§3.4 "Guard" column) ----------------------------------------------


@pytest.mark.parametrize(
    "phase", ["planning", "implementation", "verification", "review", "release"]
)
def test_start_requires_phase_intake(phase):
    """pending → in_progress guard: `phase = intake`."""
    task = put_in_state(make_task(), phase=phase)
    before = snapshot(task)
    with pytest.raises(TransitionNotAllowed):
        task.start(by="test")
    assert snapshot(task) == before


def test_start_requires_no_lease_held_by_another():
    """pending → in_progress guard: "no lease held"."""
    task = make_task()
    other = Task.objects.get(pk=task.pk)
    other.acquire_lease("worker:other")
    task.refresh_from_db()

    with pytest.raises(TransitionNotAllowed):
        task.start(by="worker:me")
    with pytest.raises(LeaseUnavailable):
        task.perform("start", by="worker:me")

    assert Task.objects.get(pk=task.pk).status == "pending"


def test_complete_requires_pr_merged():
    """in_progress → completed guard: "PR merged"."""
    task = put_in_state(make_task(), status="in_progress", phase="release")
    before = snapshot(task)
    with pytest.raises(TransitionNotAllowed):
        task.complete(by="test")
    assert snapshot(task) == before


@pytest.mark.parametrize(
    "phase", ["intake", "planning", "implementation", "verification", "review"]
)
def test_complete_requires_phase_release(phase):
    """in_progress → completed guard: `phase = release`."""
    task = put_in_state(make_task(), status="in_progress", phase=phase, pr_merged=True)
    before = snapshot(task)
    with pytest.raises(TransitionNotAllowed):
        task.complete(by="test")
    assert snapshot(task) == before


def test_unblock_waits_for_the_backoff():
    """blocked → in_progress guard: "retry backoff elapsed"."""
    now = timezone.now()
    task = put_in_state(
        make_task(),
        status="blocked",
        phase="implementation",
        blocked_until=now + timedelta(minutes=5),
    )
    with time_machine.travel(now + timedelta(minutes=4), tick=False):
        with pytest.raises(TransitionNotAllowed):
            task.perform("unblock", by="test")
        assert Task.objects.get(pk=task.pk).status == "blocked"

    task.refresh_from_db()
    with time_machine.travel(now + timedelta(minutes=5, seconds=1), tick=False):
        task.perform("unblock", by="test")

    row = Task.objects.get(pk=task.pk)
    assert row.status == "in_progress"
    assert row.blocked_until is None


def test_block_refused_when_retries_exhausted():
    """in_progress → blocked guard: "retries < max" (CODEX_MAX_RETRIES)."""
    limit = settings.CODEX_MAX_RETRIES
    task = put_in_state(
        make_task(), status="in_progress", phase="implementation", retry_count=limit
    )
    before = snapshot(task)
    with pytest.raises(TransitionNotAllowed):
        task.block(by="test", reason="exit 124", exit_code=124)
    assert snapshot(task) == before

    put_in_state(task, retry_count=limit - 1)
    task.perform("block", by="test", reason="exit 124", exit_code=124)
    assert Task.objects.get(pk=task.pk).retry_count == limit


# -- §3.5: state changes hold the lease ----------------------------------------


def test_saving_a_status_change_without_the_lease_raises():
    task = put_in_state(make_task(), status="in_progress", phase="implementation")
    before = snapshot(task)
    task.pause(by="test")
    assert task.status == "paused"

    with pytest.raises(LeaseRequired):
        task.save()

    assert snapshot(task) == before
    assert not task.events.filter(kind=EventKind.TRANSITION).exists()


def test_transition_inside_leased_block_is_saved():
    task = put_in_state(make_task(), status="in_progress", phase="implementation")
    with task.leased("worker:1"):
        task.pause(by="worker:1")
        task.save(release_lease=True)

    row = Task.objects.get(pk=task.pk)
    assert row.status == "paused"
    assert row.lease_holder is None
    event = Event.objects.filter(task=task, kind=EventKind.TRANSITION).get()
    assert event.actor == "worker:1"


def test_direct_assignment_of_status_is_refused():
    """`status` is a protected FSM field: only transitions move it."""
    task = make_task()
    with pytest.raises(AttributeError):
        task.status = "completed"
    assert Task.objects.get(pk=task.pk).status == "pending"


def test_stale_object_cannot_apply_a_transition_from_an_old_status():
    """§3.5: a writer that read an old version must re-read, not overwrite."""
    task = put_in_state(make_task(), status="in_progress", phase="implementation")
    stale = Task.objects.get(pk=task.pk)
    task.perform("pause", by="user:alice")

    with pytest.raises((TransitionNotAllowed, VersionConflict)):
        stale.perform("escalate", by="worker:1", reason="security issue")

    assert Task.objects.get(pk=task.pk).status == "paused"
