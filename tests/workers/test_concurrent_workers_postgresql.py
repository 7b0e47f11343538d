"""Two scheduled-job workers at once, on real PostgreSQL: django-q2 delivers at
least once and several clusters may run the same schedule, so each job must
do its work exactly once when it races itself."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

pytestmark = [
    pytest.mark.postgresql,
    pytest.mark.django_db(transaction=True),
]

TIMEOUT = 30
ADVANCE = "codex.tasks.jobs.advance_task"


def run_together(function: Callable[[], Any], copies: int = 2) -> list[Any]:
    """Run `function` in `copies` threads (own connections), released together."""
    from django.db import connection

    barrier = threading.Barrier(copies, timeout=TIMEOUT)
    results: list[Any] = [None] * copies

    def worker(index: int) -> None:
        try:
            barrier.wait()
            results[index] = function()
        except BaseException as exc:  # noqa: BLE001 - reported to the test
            results[index] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(copies)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(TIMEOUT * 2)
    assert not any(thread.is_alive() for thread in threads), "a thread hung"
    errors = [r for r in results if isinstance(r, BaseException)]
    assert not errors, errors
    return results


@pytest.fixture
def enqueued(monkeypatch) -> list[tuple]:
    calls: list[tuple] = []
    lock = threading.Lock()

    def fake_async_task(func, *args, **kwargs):
        with lock:
            calls.append((func, *args))
        return "fake-id"

    monkeypatch.setattr("django_q.tasks.async_task", fake_async_task)
    return calls


def test_two_recovery_jobs_recover_a_stuck_task_once(time_machine, enqueued):
    from django.utils import timezone

    from codex.events.models import Event, EventKind
    from codex.tasks.models import Task
    from codex.tasks.recovery import ACTOR, recover_stuck_tasks
    from tests.factories import make_task, put_in_state

    start = timezone.now()
    time_machine.move_to(start, tick=False)
    task = put_in_state(
        make_task(),
        status="in_progress",
        phase="review",
        phase_entered_at=start,
        lease_holder="worker:dead:1",
        lease_expires_at=start + timedelta(seconds=60),
    )
    time_machine.move_to(start + timedelta(hours=2, minutes=1), tick=False)
    enqueued.clear()  # intake's own advance_task

    results = run_together(recover_stuck_tasks)

    assert sorted(results) == [0, 1]
    row = Task.objects.get(pk=task.pk)
    assert row.phase_progress["review"]["recoveries"] == 1
    assert row.lease_holder is None
    controls = Event.objects.filter(task=task, kind=EventKind.CONTROL, actor=ACTOR)
    assert controls.count() == 1
    assert enqueued == [(ADVANCE, task.task_id)]


def test_two_reapers_fail_a_silent_run_once(time_machine, enqueued):
    from django.utils import timezone

    from codex.events.models import Event
    from codex.fleet.heartbeats import reap_stale_work
    from codex.fleet.models import AgentRun
    from tests.factories import make_task, put_in_state

    start = timezone.now()
    time_machine.move_to(start, tick=False)
    task = put_in_state(make_task(), status="in_progress", phase="implementation")
    run = AgentRun.objects.begin(by="worker:test", task=task)
    run.beat()
    time_machine.move_to(start + timedelta(seconds=301), tick=False)
    enqueued.clear()

    results = run_together(reap_stale_work)

    assert sorted(len(r["runs_failed"]) for r in results) == [0, 1]
    run.refresh_from_db()
    assert run.status == "failed"
    failures = Event.objects.filter(subject=f"run:{run.session_id}", target="failed")
    assert failures.count() == 1
    assert enqueued == [(ADVANCE, task.task_id)]
