"""Spec 002 §3.6 recovery: "scans for stuck tasks (>2 hours in same phase)",
"reset to recovery point, clear transient errors", "re-queue for processing",
"alert if recovery attempted >3 times for same phase"."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from codex.events.models import Event, EventKind
from codex.notifications.models import Notification
from codex.tasks.models import Task
from codex.tasks.recovery import (
    ACTOR,
    CLEARED_BY_RECOVERY,
    RECOVERY_POINTS,
    recover_stuck_tasks,
    recover_task,
)
from tests.factories import make_task, put_in_state

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
STUCK = timedelta(hours=2, minutes=1)  # "> 2 hours in same phase"
NOT_YET = timedelta(hours=1, minutes=59)
ADVANCE = "codex.tasks.jobs.advance_task"


@pytest.fixture
def clock(time_machine):
    """Frozen at T0; tests move it forward."""
    time_machine.move_to(T0, tick=False)
    return time_machine


def stuck_task(status: str = "in_progress", phase: str = "implementation", **fields):
    """A task that entered `phase` at the current (frozen) time, unless given."""
    fields.setdefault("phase_entered_at", timezone.now())
    return put_in_state(make_task(), status=status, phase=phase, **fields)


def run_recovery(django_capture_on_commit_callbacks) -> int:
    """Run the job and the jobs it enqueues on commit."""
    with django_capture_on_commit_callbacks(execute=True):
        return recover_stuck_tasks()


def advance_calls(enqueued) -> list[str]:
    return [args[1] for args, _ in enqueued if args[0] == ADVANCE]


def recovery_events(task: Task) -> list[Event]:
    return list(
        Event.objects.filter(task=task, kind=EventKind.CONTROL, actor=ACTOR).in_order()
    )


def test_a_task_2h01m_in_implementation_is_recovered_and_requeued(
    clock, enqueued, django_capture_on_commit_callbacks
):
    task = stuck_task(
        current_task=2,
        total_tasks=3,
        commits=[{"sha": "a1"}, {"sha": "b2"}],
        branch="feat/login",
    )
    clock.move_to(T0 + STUCK)

    assert run_recovery(django_capture_on_commit_callbacks) == 1

    row = Task.objects.get(pk=task.pk)
    assert (row.status, row.phase) == ("in_progress", "implementation")
    assert row.phase_entered_at == T0 + STUCK
    progress = row.phase_progress["implementation"]
    assert (progress["status"], progress["recoveries"]) == ("in_progress", 1)
    # Recovery point "after each commit": current_task and commits[] preserved.
    assert (row.current_task, row.commits) == (2, [{"sha": "a1"}, {"sha": "b2"}])
    assert row.lease_holder is None and row.version > task.version
    assert advance_calls(enqueued) == [task.task_id]
    (event,) = recovery_events(task)
    assert event.data["recovery_point"] == RECOVERY_POINTS["implementation"]
    assert event.data["recoveries"] == 1
    assert "stuck in implementation" in event.reason


def test_1h59m_in_a_phase_is_not_stuck(
    clock, enqueued, django_capture_on_commit_callbacks
):
    task = stuck_task()
    clock.move_to(T0 + NOT_YET)

    assert run_recovery(django_capture_on_commit_callbacks) == 0

    row = Task.objects.get(pk=task.pk)
    assert row.version == task.version
    assert enqueued == [] and recovery_events(task) == []


def test_exactly_two_hours_is_not_more_than_two_hours(clock):
    task = stuck_task()
    clock.move_to(T0 + timedelta(hours=2))
    assert recover_stuck_tasks() == 0
    assert recover_task(task.task_id) is False


def test_the_threshold_comes_from_the_setting(clock, settings):
    settings.CODEX_STUCK_AFTER_MINUTES = 30
    stuck_task()
    clock.move_to(T0 + timedelta(minutes=31))
    assert recover_stuck_tasks() == 1


@pytest.mark.parametrize(
    "status", ["paused", "escalated", "completed", "failed", "cancelled"]
)
def test_tasks_not_pending_in_progress_or_blocked_are_never_touched(
    clock, enqueued, status
):
    task = stuck_task(status=status)
    clock.move_to(T0 + timedelta(days=3))

    assert recover_stuck_tasks() == 0
    assert recover_task(task.task_id) is False

    row = Task.objects.get(pk=task.pk)
    assert (row.status, row.version) == (status, task.version)
    assert "recoveries" not in row.phase_progress["implementation"]


def test_running_it_twice_recovers_once(clock, django_capture_on_commit_callbacks):
    stuck_task()
    clock.move_to(T0 + STUCK)
    assert recover_stuck_tasks() == 1
    assert recover_stuck_tasks() == 0  # phase_entered_at was reset


@pytest.mark.parametrize("phase", list(RECOVERY_POINTS))
def test_every_phase_restarts_from_its_recovery_point(clock, phase):
    task = stuck_task(phase=phase)
    progress = dict(task.phase_progress)
    progress[phase] = {"status": "completed", "completed_at": T0.isoformat()}
    put_in_state(task, phase_progress=progress)
    clock.move_to(T0 + STUCK)

    assert recover_stuck_tasks() == 1

    row = Task.objects.get(pk=task.pk)
    assert row.phase == phase
    assert row.phase_progress[phase]["status"] == "in_progress"
    assert "completed_at" not in row.phase_progress[phase]
    assert recovery_events(task)[0].data["recovery_point"] == RECOVERY_POINTS[phase]


def recover_again(clock, times: int) -> None:
    for _ in range(times):
        clock.shift(STUCK)
        assert recover_stuck_tasks() == 1


def test_the_fourth_recovery_of_a_phase_alerts_once_and_the_fifth_again(clock):
    """ ">3 times for same phase": recoveries 1-3 stay quiet, 4 and 5 alert."""
    task = stuck_task()

    recover_again(clock, 3)
    assert Notification.objects.count() == 0

    recover_again(clock, 1)
    (alert,) = Notification.objects.all()
    # One per configured channel (notify.channels: the log by default).
    assert alert.notification_id == (
        f"recovery-alert:{task.task_id}:implementation:4:log"
    )
    assert alert.task_id == task.pk
    assert "4 times" in alert.subject

    recover_again(clock, 1)
    assert sorted(Notification.objects.values_list("notification_id", flat=True)) == [
        f"recovery-alert:{task.task_id}:implementation:4:log",
        f"recovery-alert:{task.task_id}:implementation:5:log",
    ]
    row = Task.objects.get(pk=task.pk)
    assert row.phase_progress["implementation"]["recoveries"] == 5


def test_recoveries_are_counted_per_phase(clock, settings):
    task = stuck_task(phase="planning")
    recover_again(clock, 4)
    assert Notification.objects.count() == 1
    put_in_state(task, phase="implementation")
    recover_again(clock, 3)
    row = Task.objects.get(pk=task.pk)
    assert row.phase_progress["planning"]["recoveries"] == 4
    assert row.phase_progress["implementation"]["recoveries"] == 3
    assert Notification.objects.count() == 1


def test_the_alert_threshold_comes_from_the_setting(clock, settings):
    settings.CODEX_RECOVERY_ALERT_AFTER = 1
    stuck_task()
    recover_again(clock, 1)
    assert Notification.objects.count() == 0
    recover_again(clock, 1)
    assert Notification.objects.count() == 1


def test_transient_errors_of_the_phase_are_marked_cleared(clock):
    errors = [
        {"phase": "planning", "message": "old", "resolution": ""},
        {"phase": "implementation", "message": "529 overloaded", "resolution": ""},
        {"phase": "implementation", "message": "fixed", "resolution": "retried"},
        {"phase": "implementation", "message": "timeout", "resolution": ""},
    ]
    task = stuck_task(errors=errors)
    clock.move_to(T0 + STUCK)

    recover_stuck_tasks()

    row = Task.objects.get(pk=task.pk)
    assert [e["resolution"] for e in row.errors] == [
        "",  # another phase's error is not this recovery's business
        CLEARED_BY_RECOVERY,
        "retried",  # a resolution already given is kept
        CLEARED_BY_RECOVERY,
    ]
    assert [e["message"] for e in row.errors] == [e["message"] for e in errors]
    assert recovery_events(task)[0].data["errors_cleared"] == 2


def test_a_stuck_blocked_task_is_unblocked_despite_its_backoff(
    clock, enqueued, django_capture_on_commit_callbacks
):
    task = stuck_task(
        status="blocked",
        blocked_reason="exit 23",
        blocked_until=T0 + timedelta(days=1),
        retry_count=2,
    )
    clock.move_to(T0 + STUCK)

    assert run_recovery(django_capture_on_commit_callbacks) == 1

    row = Task.objects.get(pk=task.pk)
    assert (row.status, row.blocked_until, row.blocked_reason) == (
        "in_progress",
        None,
        "",
    )
    transition = Event.objects.filter(task=task, kind=EventKind.TRANSITION).latest("id")
    assert (transition.source, transition.target, transition.actor) == (
        "blocked",
        "in_progress",
        ACTOR,
    )
    assert advance_calls(enqueued) == [task.task_id]


def test_an_expired_lease_is_broken_with_a_lease_event(clock):
    task = stuck_task(
        lease_holder="worker:dead:1", lease_expires_at=T0 + timedelta(seconds=60)
    )
    clock.move_to(T0 + STUCK)

    assert recover_stuck_tasks() == 1

    lease_event = Event.objects.get(task=task, kind=EventKind.LEASE)
    assert lease_event.actor == ACTOR
    assert lease_event.data == {
        "action": "force_break",
        "previous_holder": "worker:dead:1",
    }
    assert "worker:dead:1" in lease_event.reason
    row = Task.objects.get(pk=task.pk)
    assert row.lease_holder is None
    assert row.phase_progress["implementation"]["recoveries"] == 1


def test_a_live_lease_is_left_alone(clock, enqueued):
    """A holder still renewing its lease is working, however long the phase."""
    clock.move_to(T0 + STUCK)
    task = stuck_task(
        phase_entered_at=T0,
        lease_holder="worker:busy:2",
        lease_expires_at=timezone.now() + timedelta(seconds=30),
    )

    assert recover_stuck_tasks() == 0
    # Even when asked directly (the lease was taken after the scan).
    assert recover_task(task.task_id) is False

    row = Task.objects.get(pk=task.pk)
    assert (row.lease_holder, row.version) == ("worker:busy:2", task.version)
    assert not Event.objects.filter(task=task, kind=EventKind.LEASE).exists()
    assert recovery_events(task) == []


def test_a_lease_held_by_another_recovery_job_is_not_shared(clock):
    """Two recovery jobs at once (two clusters, or a redelivery): each takes the
    lease under its own name, so neither re-takes the other's lease."""
    clock.move_to(T0 + STUCK)
    task = stuck_task(
        phase_entered_at=T0,
        lease_holder=ACTOR,  # what a job using the bare name would hold
        lease_expires_at=timezone.now() + timedelta(seconds=30),
    )
    assert recover_task(task.task_id) is False
    assert Task.objects.get(pk=task.pk).version == task.version


def test_a_task_that_moved_on_before_the_lease_is_not_recovered(clock, monkeypatch):
    """recover_task decides on the row as read under the lease, and gives the
    lease back when it has nothing to do."""
    task = stuck_task()
    clock.move_to(T0 + STUCK)
    original = Task.acquire_lease

    def worker_finishes_the_phase_first(self, holder, **options):
        put_in_state(task, phase="verification", phase_entered_at=timezone.now())
        return original(self, holder, **options)

    monkeypatch.setattr(Task, "acquire_lease", worker_finishes_the_phase_first)

    assert recover_task(task.task_id) is False

    row = Task.objects.get(pk=task.pk)
    assert (row.phase, row.lease_holder) == ("verification", None)
    assert "recoveries" not in row.phase_progress["verification"]
    assert recovery_events(task) == []


def test_an_unknown_task_id_is_ignored():
    assert recover_task("FEAT-20260101-zzzzzz") is False


def test_a_pending_task_whose_first_step_was_lost_is_queued_again(
    clock, enqueued, django_capture_on_commit_callbacks
):
    """Its first step may be gone with a restarted Redis broker's memory."""
    task = stuck_task(status="pending", phase="intake")
    clock.move_to(T0 + STUCK)

    assert run_recovery(django_capture_on_commit_callbacks) == 1

    row = Task.objects.get(pk=task.pk)
    assert row.status == "pending"
    assert row.phase_progress["intake"]["recoveries"] == 1
    assert advance_calls(enqueued) == [task.task_id]
