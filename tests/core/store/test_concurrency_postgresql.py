"""Real concurrent writers on PostgreSQL (spec 002 §3.5).

Threads (and, once, processes) each use their own database connection and start
together at a barrier. Django models are imported inside the functions so that a
spawned child process can import this module before it has set Django up.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
from collections.abc import Callable
from typing import Any

import pytest

pytestmark = [
    pytest.mark.postgresql,
    pytest.mark.django_db(transaction=True),
]

BARRIER_TIMEOUT = 30


def run_together(functions: list[Callable[[], Any]]) -> list[tuple[str, Any]]:
    """Run each function in its own thread, released together by a barrier.

    Returns, in order, ("ok", result) or ("error", exception) per function.
    """
    from django.db import connection

    barrier = threading.Barrier(len(functions), timeout=BARRIER_TIMEOUT)
    results: list[tuple[str, Any]] = [("missing", None)] * len(functions)

    def worker(index: int, function: Callable[[Any], Any]) -> None:
        try:
            results[index] = ("ok", function(barrier))
        except BaseException as exc:  # noqa: BLE001 - reported to the test
            results[index] = ("error", exc)
        finally:
            connection.close()

    threads = [
        threading.Thread(target=worker, args=(index, function))
        for index, function in enumerate(functions)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(BARRIER_TIMEOUT * 2)
    assert not any(thread.is_alive() for thread in threads), "a thread hung"
    assert all(status != "missing" for status, _ in results)
    return results


def split(results):
    wins = [value for status, value in results if status == "ok"]
    errors = [value for status, value in results if status == "error"]
    return wins, errors


def in_progress_task():
    from tests.factories import make_task, put_in_state

    return put_in_state(make_task(), status="in_progress", phase="planning")


def status_transitions_from(task, source: str):
    from codex.events.models import Event, EventKind

    return Event.objects.filter(
        task_id=task.pk, kind=EventKind.TRANSITION, field="status", source=source
    )


def test_two_transitions_from_the_same_state_only_one_wins():
    from django_fsm import TransitionNotAllowed

    from codex.core.store.refusals import LeaseUnavailable, VersionConflict
    from codex.tasks.models import Task

    task = in_progress_task()

    def act(action: str):
        def run(barrier):
            mine = Task.objects.get(pk=task.pk)
            barrier.wait()
            mine.perform(action, by=f"user:{action}")
            return action

        return run

    results = run_together([act("pause"), act("cancel")])

    wins, errors = split(results)
    assert len(wins) == 1, results
    assert len(errors) == 1, results
    assert isinstance(
        errors[0], VersionConflict | LeaseUnavailable | TransitionNotAllowed
    ), errors
    target = {"pause": "paused", "cancel": "cancelled"}[wins[0]]
    row = Task.objects.filter(pk=task.pk).values("status", "lease_holder")[0]
    assert row == {"status": target, "lease_holder": None}
    [event] = status_transitions_from(task, "in_progress")
    assert event.target == target


def test_eight_holders_race_for_one_lease_and_one_wins():
    from codex.core.store.refusals import LeaseUnavailable
    from codex.tasks.models import Task

    task = in_progress_task()

    def take(holder: str):
        def run(barrier):
            mine = Task.objects.get(pk=task.pk)
            barrier.wait()
            mine.acquire_lease(holder, attempts=1)
            return holder

        return run

    holders = [f"worker:{index}" for index in range(8)]
    results = run_together([take(holder) for holder in holders])

    wins, errors = split(results)
    assert len(wins) == 1, results
    assert len(errors) == 7
    assert all(isinstance(error, LeaseUnavailable) for error in errors), errors
    assert {error.holder for error in errors} == {wins[0]}
    row = Task.objects.filter(pk=task.pk).values("lease_holder", "version")[0]
    # One applied lease update on top of the version the threads read.
    assert row == {"lease_holder": wins[0], "version": task.version + 1}


def test_eight_identical_creations_with_one_idempotency_key_make_one_task():
    from codex.events.models import Event, EventKind
    from codex.tasks.models import Task
    from tests.factories import make_repository

    repository = make_repository()
    request = {
        "repository": repository,
        "title": "Add single sign-on",
        "description": "As an admin, I want SSO.",
        "priority": "high",
        "acceptance_criteria": "- SSO works",
        "idempotency_key": "key-race-1",
    }

    def create(barrier):
        barrier.wait()
        task, created = Task.objects.create_from_request(**request)
        return task.task_id, created

    results = run_together([create] * 8)

    wins, errors = split(results)
    assert errors == []
    tasks = Task.objects.filter(idempotency_key="key-race-1")
    assert tasks.count() == 1
    task = tasks.get()
    assert {task_id for task_id, _ in wins} == {task.task_id}
    assert [created for _, created in wins].count(True) == 1
    assert Event.objects.filter(task=task, kind=EventKind.CREATED).count() == 1


def test_two_people_resolving_one_escalation_only_one_wins():
    from codex.core.store.refusals import LeaseUnavailable, VersionConflict
    from codex.tasks.models import Escalation, Task
    from codex.tasks.models.escalation import AlreadyResolved

    task = in_progress_task()
    task.perform("escalate", by="worker:qa", reason="need input", questions=["Why?"])
    escalation = Escalation.objects.get(task=task, resolved_at__isnull=True)

    def resolve(decision: str):
        def run(barrier):
            mine = Task.objects.get(pk=task.pk)
            their_escalation = Escalation.objects.get(pk=escalation.pk)
            barrier.wait()
            mine.resolve_escalation(
                their_escalation,
                decision=decision,
                by=f"user:{decision}",
                resolution=f"decided to {decision}",
            )
            return decision

        return run

    results = run_together([resolve("resume"), resolve("cancel")])

    wins, errors = split(results)
    assert len(wins) == 1, results
    assert len(errors) == 1, results
    assert isinstance(
        errors[0], AlreadyResolved | LeaseUnavailable | VersionConflict
    ), errors
    decision = wins[0]
    escalation.refresh_from_db()
    assert escalation.decision == decision
    assert escalation.resolved_by_label == f"user:{decision}"
    assert escalation.consumed_at is not None
    target = {"resume": "in_progress", "cancel": "cancelled"}[decision]
    row = Task.objects.filter(pk=task.pk).values("status", "lease_holder")[0]
    assert row == {"status": target, "lease_holder": None}
    [event] = status_transitions_from(task, "escalated")
    assert event.target == target


def test_the_single_update_refuses_while_another_holders_lease_is_live():
    """perform's one UPDATE (momentary lease) on a copy read before a worker
    took the lease: the WHERE clause refuses it while the worker holds it, and
    the worker still transitions under its lease."""

    from codex.core.store.refusals import LeaseUnavailable
    from codex.tasks.models import Task

    task = in_progress_task()
    leased = threading.Event()
    refused = threading.Event()

    def worker(barrier):
        mine = Task.objects.get(pk=task.pk)
        barrier.wait()
        mine.acquire_lease("worker:a", attempts=1)
        leased.set()
        assert refused.wait(BARRIER_TIMEOUT)
        mine.perform("pause", by="worker:a")  # the holder's own transition
        mine.release_lease()
        return "paused"

    def person(barrier):
        mine = Task.objects.get(pk=task.pk)  # reads a free lease
        barrier.wait()
        assert leased.wait(BARRIER_TIMEOUT)
        try:
            mine.perform("cancel", by="user:bob")
        finally:
            refused.set()
        return "cancelled"

    results = run_together([worker, person])

    assert results[0] == ("ok", "paused"), results
    status, error = results[1]
    assert status == "error" and isinstance(error, LeaseUnavailable), results
    assert error.holder == "worker:a"
    row = Task.objects.filter(pk=task.pk).values("status", "lease_holder")[0]
    assert row == {"status": "paused", "lease_holder": None}
    assert [e.target for e in status_transitions_from(task, "in_progress")] == [
        "paused"
    ]


def test_racing_single_updates_from_one_version_apply_once():
    """Eight people pause the same task from copies of the same version: each
    sends one conditional UPDATE; the version check lets exactly one through,
    the others are told (conflict, or not allowed once re-read)."""
    from django_fsm import TransitionNotAllowed

    from codex.core.store.refusals import LeaseUnavailable, VersionConflict
    from codex.tasks.models import Task

    task = in_progress_task()

    def pause(index: int):
        def run(barrier):
            mine = Task.objects.get(pk=task.pk)
            barrier.wait()
            mine.perform("pause", by=f"user:{index}")
            return index

        return run

    results = run_together([pause(index) for index in range(8)])

    wins, errors = split(results)
    assert len(wins) == 1, results
    assert all(
        isinstance(e, VersionConflict | TransitionNotAllowed | LeaseUnavailable)
        for e in errors
    ), errors
    row = Task.objects.filter(pk=task.pk).values("status", "version")[0]
    assert row == {"status": "paused", "version": task.version + 1}
    [event] = status_transitions_from(task, "in_progress")
    assert event.actor == f"user:{wins[0]}"


def test_a_concurrent_version_bump_is_detected_by_the_single_update():
    """A write that lands between a person's read and their transition makes
    the transition's UPDATE match no row: reported as a version conflict,
    nothing written, the copy re-read."""

    from codex.core.store.refusals import VersionConflict
    from codex.tasks.models import Task

    task = in_progress_task()
    read = threading.Event()
    written = threading.Event()

    def other_writer(barrier):
        mine = Task.objects.get(pk=task.pk)
        barrier.wait()
        assert read.wait(BARRIER_TIMEOUT)
        mine.branch = "feat/other"
        mine.save()
        written.set()
        return mine.version

    def person(barrier):
        mine = Task.objects.get(pk=task.pk)
        read.set()
        barrier.wait()
        assert written.wait(BARRIER_TIMEOUT)
        try:
            mine.perform("pause", by="user:bob")
        except VersionConflict as exc:
            return ("conflict", exc.expected, mine.version, mine.branch)
        return ("applied",)

    results = run_together([other_writer, person])

    [(_, other_version), (_, outcome)] = results
    assert outcome == ("conflict", task.version, other_version, "feat/other")
    row = Task.objects.filter(pk=task.pk).values("status", "version", "branch")[0]
    assert row == {
        "status": "in_progress",
        "version": other_version,
        "branch": "feat/other",
    }
    assert not status_transitions_from(task, "in_progress").exists()


# -- separate processes ---------------------------------------------------------


def _process_writer(database_name, pk, branch, barrier, results) -> None:
    """Child process: set Django up on the test database, then save a stale copy."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "codex.settings")
    import django

    django.setup()
    from django.db import connection

    connection.settings_dict["NAME"] = database_name
    from codex.core.store.refusals import VersionConflict
    from codex.tasks.models import Task

    try:
        mine = Task.objects.get(pk=pk)
        barrier.wait(BARRIER_TIMEOUT)
        mine.branch = branch
        try:
            mine.save()
            results.put((branch, "ok"))
        except VersionConflict as exc:
            results.put((branch, exc.code))
    except BaseException as exc:  # noqa: BLE001 - reported to the parent
        results.put((branch, f"unexpected {type(exc).__name__}: {exc}"))
    finally:
        connection.close()


def test_two_processes_saving_the_same_version_only_one_wins():
    from django.db import connection

    from codex.tasks.models import Task
    from tests.factories import make_task

    task = make_task()
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(2)
    results = context.Queue()
    processes = [
        context.Process(
            target=_process_writer,
            args=(connection.settings_dict["NAME"], task.pk, branch, barrier, results),
        )
        for branch in ("feat/one", "feat/two")
    ]
    for process in processes:
        process.start()
    outcomes = dict(results.get(timeout=BARRIER_TIMEOUT * 2) for _ in processes)
    for process in processes:
        process.join(BARRIER_TIMEOUT)
        assert process.exitcode == 0

    assert sorted(outcomes.values()) == ["ok", "version_mismatch"], outcomes
    [winner] = [branch for branch, outcome in outcomes.items() if outcome == "ok"]
    row = Task.objects.filter(pk=task.pk).values("branch", "version")[0]
    assert row == {"branch": winner, "version": 2}
