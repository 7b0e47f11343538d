"""Leases (spec 002 §3.5): 60 s, 3 attempts with a 5 s backoff, force break.

The clock is moved with time_machine; nothing sleeps for real.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from unittest import mock

import pytest
import time_machine

from codex.core.store.refusals import LeaseRequired, LeaseUnavailable, VersionConflict
from codex.core.store.versioned import VersionedLeasedModel
from codex.events.models import Event, EventKind
from codex.tasks.models import Task
from tests.factories import make_task, put_in_state

T0 = datetime(2025, 3, 1, 12, 0, 0, tzinfo=UTC)


@pytest.fixture
def clock():
    with time_machine.travel(T0, tick=False) as traveller:
        yield traveller


@pytest.fixture
def task(clock):
    return put_in_state(make_task(), status="in_progress", phase="planning")


def copy(task: Task) -> Task:
    return Task.objects.get(pk=task.pk)


def db_lease(task: Task) -> tuple[str | None, datetime | None]:
    row = Task.objects.filter(pk=task.pk).values("lease_holder", "lease_expires_at")
    return row[0]["lease_holder"], row[0]["lease_expires_at"]


def lease_events(task: Task):
    return Event.objects.filter(task=task, kind=EventKind.LEASE).order_by("id")


class SleepSpy:
    def __init__(self, clock=None) -> None:
        self.calls: list[float] = []
        self.clock = clock

    def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)
        if self.clock is not None:
            self.clock.shift(timedelta(seconds=seconds))


@pytest.mark.django_db
class TestAcquire:
    def test_acquire_sets_the_holder_and_an_expiry_60_seconds_ahead(self, task):
        task.acquire_lease("worker:a")
        expected = ("worker:a", T0 + timedelta(seconds=60))
        assert db_lease(task) == expected
        assert (task.lease_holder, task.lease_expires_at) == expected
        assert task.held_lease == "worker:a"
        assert task.lease_is_active

    def test_the_lease_length_comes_from_the_setting(self, task, settings):
        settings.CODEX_LEASE_SECONDS = 90
        task.acquire_lease("worker:a")
        assert db_lease(task)[1] == T0 + timedelta(seconds=90)

    def test_a_second_holder_gives_up_after_the_configured_attempts(
        self, task, settings
    ):
        settings.CODEX_LEASE_RETRY_BACKOFF_SECONDS = 5
        task.acquire_lease("worker:a")
        other = copy(task)
        sleep = SleepSpy()
        attempts = []
        original = Task._lease_update

        def counting_update(obj, **values):
            applied = original(obj, **values)
            attempts.append(applied)
            return applied

        with (
            mock.patch.object(Task, "_lease_update", counting_update),
            pytest.raises(LeaseUnavailable) as caught,
        ):
            other.acquire_lease("worker:b", sleep=sleep)

        assert attempts == [False] * settings.CODEX_LEASE_RETRY_ATTEMPTS
        assert len(attempts) == 3
        assert sleep.calls == [5, 5]
        assert caught.value.code == "lease_held"
        assert caught.value.holder == "worker:a"
        assert caught.value.expires_at == T0 + timedelta(seconds=60)
        assert db_lease(task) == ("worker:a", T0 + timedelta(seconds=60))
        assert other.held_lease is None

    def test_the_attempt_count_follows_the_setting(self, task, settings):
        settings.CODEX_LEASE_RETRY_ATTEMPTS = 5
        settings.CODEX_LEASE_RETRY_BACKOFF_SECONDS = 2
        task.acquire_lease("worker:a")
        sleep = SleepSpy()
        with pytest.raises(LeaseUnavailable):
            copy(task).acquire_lease("worker:b", sleep=sleep)
        assert sleep.calls == [2, 2, 2, 2]

    def test_explicit_attempts_and_backoff_override_the_settings(self, task):
        task.acquire_lease("worker:a")
        sleep = SleepSpy()
        with pytest.raises(LeaseUnavailable):
            copy(task).acquire_lease(
                "worker:b", attempts=2, backoff_seconds=7, sleep=sleep
            )
        assert sleep.calls == [7]

    def test_one_attempt_never_sleeps(self, task, settings):
        settings.CODEX_LEASE_RETRY_BACKOFF_SECONDS = 5
        task.acquire_lease("worker:a")
        sleep = SleepSpy()
        with pytest.raises(LeaseUnavailable):
            copy(task).acquire_lease("worker:b", attempts=1, sleep=sleep)
        assert sleep.calls == []

    def test_a_lease_that_expires_during_the_backoff_is_taken(self, task, clock):
        task.acquire_lease("worker:a")
        sleep = SleepSpy(clock)  # each backoff really moves the clock
        other = copy(task)
        other.acquire_lease("worker:b", backoff_seconds=31, sleep=sleep)
        assert sleep.calls == [31, 31]
        assert db_lease(task) == ("worker:b", T0 + timedelta(seconds=62 + 60))
        assert other.held_lease == "worker:b"

    def test_the_same_holder_reacquiring_succeeds_and_extends(self, task, clock):
        task.acquire_lease("worker:a")
        clock.shift(timedelta(seconds=20))
        sleep = SleepSpy()
        task.acquire_lease("worker:a", sleep=sleep)
        assert sleep.calls == []
        assert db_lease(task) == ("worker:a", T0 + timedelta(seconds=80))

    def test_the_same_holder_from_another_copy_reacquires(self, task):
        task.acquire_lease("worker:a")
        again = copy(task)
        again.acquire_lease("worker:a", attempts=1)
        assert again.held_lease == "worker:a"
        assert not lease_events(task).exists()

    def test_a_stale_copy_rereads_and_acquires_a_free_lease(self, task):
        stale = copy(task)
        task.branch = "feat/x"
        task.save()
        stale.acquire_lease("worker:b", attempts=1)
        assert db_lease(task)[0] == "worker:b"
        assert stale.version == task.version + 1

    def test_the_lease_is_held_until_the_last_second(self, task, clock):
        task.acquire_lease("worker:a")
        clock.shift(timedelta(seconds=59))
        with pytest.raises(LeaseUnavailable):
            copy(task).acquire_lease("worker:b", attempts=1)
        clock.shift(timedelta(seconds=1))
        copy(task).acquire_lease("worker:b", attempts=1)
        assert db_lease(task)[0] == "worker:b"


@pytest.mark.django_db
class TestTakeOver:
    def test_an_expired_lease_is_taken_over_and_logged(self, task, clock):
        task.acquire_lease("worker:a")
        other = copy(task)
        clock.shift(timedelta(seconds=61))
        sleep = SleepSpy()
        other.acquire_lease("worker:b", sleep=sleep)

        assert sleep.calls == []
        assert db_lease(task) == ("worker:b", T0 + timedelta(seconds=121))
        [event] = lease_events(task)
        assert event.actor == "worker:b"
        assert event.data["previous_holder"] == "worker:a"
        assert "worker:a" in event.reason

    def test_a_copy_loaded_before_the_first_lease_still_logs_the_takeover(
        self, task, clock
    ):
        early = copy(task)  # read while nobody held the lease
        task.acquire_lease("worker:a")
        clock.shift(timedelta(seconds=61))
        early.acquire_lease("worker:b")
        [event] = lease_events(task)
        assert event.data["previous_holder"] == "worker:a"

    def test_acquiring_a_free_or_own_lease_logs_nothing(self, task, clock):
        task.acquire_lease("worker:a")
        task.release_lease()
        task.acquire_lease("worker:a")
        clock.shift(timedelta(seconds=61))
        task.acquire_lease("worker:a")  # own expired lease: not a takeover
        assert not lease_events(task).exists()


@pytest.mark.django_db
class TestRenew:
    def test_renew_extends_the_expiry_from_now(self, task, clock):
        task.acquire_lease("worker:a")
        clock.shift(timedelta(seconds=45))
        task.renew_lease()
        assert db_lease(task) == ("worker:a", T0 + timedelta(seconds=105))
        assert task.lease_expires_at == T0 + timedelta(seconds=105)

    def test_renew_keeps_other_holders_out_past_the_first_expiry(self, task, clock):
        task.acquire_lease("worker:a")
        clock.shift(timedelta(seconds=45))
        task.renew_lease()
        clock.shift(timedelta(seconds=30))  # 75 s after the first acquire
        with pytest.raises(LeaseUnavailable):
            copy(task).acquire_lease("worker:b", attempts=1)

    def test_renew_survives_an_unrelated_write(self, task, clock):
        task.acquire_lease("worker:a")
        Task.objects.filter(pk=task.pk).update(branch="feat/other")
        clock.shift(timedelta(seconds=10))
        task.renew_lease()
        assert db_lease(task) == ("worker:a", T0 + timedelta(seconds=70))

    def test_renew_by_a_holder_that_lost_the_lease_raises(self, task, clock):
        task.acquire_lease("worker:a")
        clock.shift(timedelta(seconds=61))
        copy(task).acquire_lease("worker:b")
        with pytest.raises(LeaseUnavailable) as caught:
            task.renew_lease()
        assert caught.value.holder == "worker:b"
        assert task.held_lease is None
        assert db_lease(task) == ("worker:b", T0 + timedelta(seconds=121))

    def test_renew_without_a_lease_raises_lease_required(self, task):
        with pytest.raises(LeaseRequired):
            task.renew_lease()


@pytest.mark.django_db
class TestRelease:
    def test_release_frees_the_lease_and_returns_true(self, task):
        task.acquire_lease("worker:a")
        assert task.release_lease() is True
        assert db_lease(task) == (None, None)
        assert task.held_lease is None
        copy(task).acquire_lease("worker:b", attempts=1)

    def test_release_survives_an_unrelated_write(self, task):
        task.acquire_lease("worker:a")
        Task.objects.filter(pk=task.pk).update(branch="feat/other")
        assert task.release_lease() is True
        assert db_lease(task) == (None, None)

    def test_releasing_a_lost_lease_returns_false_and_keeps_the_new_holder(
        self, task, clock
    ):
        task.acquire_lease("worker:a")
        clock.shift(timedelta(seconds=61))
        copy(task).acquire_lease("worker:b")
        assert task.release_lease() is False
        assert db_lease(task) == ("worker:b", T0 + timedelta(seconds=121))
        assert task.held_lease is None

    def test_releasing_without_a_lease_returns_false(self, task):
        version = task.version
        assert task.release_lease() is False
        assert Task.objects.get(pk=task.pk).version == version

    def test_a_copy_that_never_acquired_cannot_release(self, task):
        task.acquire_lease("worker:a")
        assert copy(task).release_lease() is False
        assert db_lease(task)[0] == "worker:a"


@pytest.mark.django_db
class TestForceBreak:
    def test_break_removes_the_holder_and_logs_it(self, task):
        task.acquire_lease("worker:a")
        operator_copy = copy(task)
        previous = operator_copy.break_lease(by="operator:alice", reason="stuck")

        assert previous == "worker:a"
        assert db_lease(task) == (None, None)
        [event] = lease_events(task)
        assert event.actor == "operator:alice"
        assert event.reason == "stuck"
        assert event.data == {"action": "force_break", "previous_holder": "worker:a"}

    def test_break_works_from_a_stale_copy(self, task):
        stale = copy(task)
        task.acquire_lease("worker:a")
        assert stale.break_lease(by="recovery") == "worker:a"
        assert db_lease(task) == (None, None)
        assert stale.version == Task.objects.get(pk=task.pk).version

    def test_after_a_break_others_acquire_at_once_and_the_old_holder_lost_it(
        self, task
    ):
        task.acquire_lease("worker:a")
        copy(task).break_lease(by="operator:alice")
        newcomer = copy(task)
        newcomer.acquire_lease("worker:b", attempts=1)
        with pytest.raises(LeaseUnavailable):
            task.renew_lease()
        assert task.release_lease() is False
        assert db_lease(task)[0] == "worker:b"

    def test_breaking_a_free_lease_returns_none(self, task):
        assert copy(task).break_lease(by="operator:alice") is None
        [event] = lease_events(task)
        assert event.data["previous_holder"] is None


@pytest.mark.django_db
class TestWritesUnderSomeoneElsesLease:
    def test_a_status_change_while_another_holds_the_lease_is_refused(
        self, task, clock
    ):
        intruder = copy(task)
        intruder.acquire_lease("worker:b")
        clock.shift(timedelta(seconds=61))
        task.acquire_lease("worker:a")  # takes over the expired lease
        intruder.refresh_from_db()  # current version, still thinks it holds "b"

        intruder.pause(by="worker:b")
        with pytest.raises((LeaseUnavailable, LeaseRequired)):
            intruder.save()
        assert Task.objects.get(pk=task.pk).status == "in_progress"

    def test_a_status_change_by_a_non_holder_is_refused(self, task):
        task.acquire_lease("worker:a")
        other = copy(task)
        other.pause(by="user:bob")
        with pytest.raises((LeaseUnavailable, LeaseRequired)):
            other.save()
        assert Task.objects.get(pk=task.pk).status == "in_progress"

    def test_even_plain_fields_cannot_be_saved_under_someone_elses_lease(self, task):
        task.acquire_lease("worker:a")
        other = copy(task)
        other.branch = "feat/sneaky"
        with pytest.raises(LeaseUnavailable) as caught:
            other.save()
        assert caught.value.holder == "worker:a"
        assert Task.objects.get(pk=task.pk).branch == ""

    def test_plain_fields_can_be_saved_once_the_lease_expired(self, task, clock):
        task.acquire_lease("worker:a")
        other = copy(task)
        clock.shift(timedelta(seconds=60))
        other.branch = "feat/late"
        other.save()
        assert Task.objects.get(pk=task.pk).branch == "feat/late"

    def test_perform_under_someone_elses_lease_fails_at_once(self, task, settings):
        settings.CODEX_LEASE_RETRY_BACKOFF_SECONDS = 5
        task.acquire_lease("worker:a")
        other = copy(task)
        with pytest.raises(LeaseUnavailable):
            other.perform("pause", by="user:bob")  # a single attempt
        assert other.status == "in_progress"
        assert Task.objects.get(pk=task.pk).status == "in_progress"

    def test_the_holder_saves_and_a_stale_save_after_it_conflicts(self, task):
        other = copy(task)
        task.acquire_lease("worker:a")
        task.branch = "feat/a"
        task.save()
        other.branch = "feat/b"
        with pytest.raises(VersionConflict):
            other.save()


@pytest.mark.django_db
class TestLeasedContextManager:
    def test_holds_the_lease_inside_and_releases_on_exit(self, task):
        with task.leased("worker:a") as leased:
            assert leased is task
            assert db_lease(task)[0] == "worker:a"
            assert task.held_lease == "worker:a"
        assert db_lease(task) == (None, None)
        assert task.held_lease is None

    def test_releases_when_the_block_raises(self, task):
        with pytest.raises(RuntimeError, match="boom"), task.leased("worker:a"):
            raise RuntimeError("boom")
        assert db_lease(task) == (None, None)
        assert task.held_lease is None

    def test_does_not_release_a_lease_someone_else_took_over(self, task, clock):
        with task.leased("worker:a"):
            clock.shift(timedelta(seconds=61))
            copy(task).acquire_lease("worker:b")
        assert db_lease(task)[0] == "worker:b"

    def test_passes_acquire_options_through(self, task):
        task.acquire_lease("worker:a")
        sleep = SleepSpy()
        with (
            pytest.raises(LeaseUnavailable),
            copy(task).leased("worker:b", attempts=2, backoff_seconds=3, sleep=sleep),
        ):
            pytest.fail("the block must not run without the lease")
        assert sleep.calls == [3]
        assert db_lease(task)[0] == "worker:a"


@pytest.mark.django_db
def test_interleaved_refreshes_of_two_tasks_do_not_fail(task):
    """The interleaving of two threads, replayed deterministically in one.

    Thread A enters refresh_from_db (django-fsm switches `protected` off); thread B
    enters too (sees it off, so has nothing to switch back); A finishes (switches it
    on again); B goes on. Neither may fail.
    """
    a, b = copy(task), copy(task)
    original = VersionedLeasedModel.refresh_from_db
    status_field = Task._meta.get_field("status")
    steps = []

    def refresh(obj, *args, **kwargs):
        if obj is a:
            steps.append("A inside")
            b.refresh_from_db()  # thread B starts while A is inside
            return None
        steps.append("B inside")
        original(a, *args, **kwargs)  # thread A finishes its refresh ...
        status_field.protected = True  # ... and django-fsm switches the flag back
        steps.append("A done")
        return original(obj, *args, **kwargs)

    try:
        with mock.patch.object(VersionedLeasedModel, "refresh_from_db", refresh):
            a.refresh_from_db()
    finally:
        status_field.protected = True
        Task._meta.get_field("phase").protected = True
    assert steps == ["A inside", "B inside", "A done"]
    assert a.status == b.status == "in_progress"
