"""Event retention: CODEX_EVENT_RETENTION_DAYS (0 = keep forever, the default);
only events of finished tasks, or of no task, ever leave the append-only log."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from codex.events import jobs
from codex.events.jobs import prune_old_events
from codex.events.models import AppendOnlyError, Event, EventKind
from tests.factories import make_task, put_in_state

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
OLD = NOW - timedelta(days=31)  # older than a 30-day retention
RECENT = NOW - timedelta(days=29)


@pytest.fixture(autouse=True)
def clock(time_machine):
    time_machine.move_to(NOW, tick=False)


def event(task=None, *, at: datetime, subject: str = "") -> Event:
    return Event.log(
        EventKind.WORKFLOW,
        actor="test",
        reason=f"at {at:%Y-%m-%d}",
        task=task,
        subject=subject,
        created_at=at,
    )


def task_in(status: str):
    return put_in_state(make_task(), status=status, phase="release")


def surviving(*events: Event) -> set[int]:
    return set(
        Event.objects.filter(pk__in=[e.pk for e in events]).values_list("pk", flat=True)
    )


def test_retention_0_keeps_everything_forever(settings):
    settings.CODEX_EVENT_RETENTION_DAYS = 0
    ancient = event(task_in("completed"), at=NOW - timedelta(days=3650))
    orphan = event(at=NOW - timedelta(days=3650), subject="instance:work-1-a1")
    total = Event.objects.count()

    assert prune_old_events() == 0
    assert Event.objects.count() == total
    assert surviving(ancient, orphan) == {ancient.pk, orphan.pk}


def test_old_events_of_finished_tasks_and_of_no_task_are_deleted(settings):
    settings.CODEX_EVENT_RETENTION_DAYS = 30
    gone = [
        event(task_in("completed"), at=OLD),
        event(task_in("failed"), at=OLD),
        event(task_in("cancelled"), at=OLD),
        event(at=OLD, subject="webhook:push"),
    ]
    kept = [
        *(
            event(task_in(status), at=OLD)
            for status in ("in_progress", "blocked", "escalated", "paused", "pending")
        ),
        event(task_in("completed"), at=RECENT),
        event(at=RECENT, subject="webhook:push"),
    ]

    assert prune_old_events() == len(gone)

    assert surviving(*gone) == set()
    assert surviving(*kept) == {e.pk for e in kept}


def test_the_retention_boundary_is_exclusive(settings):
    settings.CODEX_EVENT_RETENTION_DAYS = 30
    boundary = event(at=NOW - timedelta(days=30))
    assert prune_old_events() == 0
    assert surviving(boundary) == {boundary.pk}


def test_it_deletes_in_batches_until_done(settings, monkeypatch):
    settings.CODEX_EVENT_RETENTION_DAYS = 30
    monkeypatch.setattr(jobs, "PRUNE_BATCH_SIZE", 2)
    old = [event(at=OLD) for _ in range(5)]

    assert prune_old_events() == 5
    assert surviving(*old) == set()
    assert prune_old_events() == 0  # safe to run again


def test_the_log_stays_append_only_for_everyone_else(settings):
    settings.CODEX_EVENT_RETENTION_DAYS = 30
    old = event(at=OLD)
    with pytest.raises(AppendOnlyError):
        Event.objects.filter(pk=old.pk).delete()
    with pytest.raises(AppendOnlyError):
        old.delete()
    assert surviving(old) == {old.pk}
