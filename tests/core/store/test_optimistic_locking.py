"""Optimistic locking on the task envelope (spec 002 §3.5, VERSION_MISMATCH).

Every write carries the version it read; a write from a stale copy is refused and
leaves the row as the first writer left it.
"""

from __future__ import annotations

import pytest

from codex.core.store.refusals import LeaseRequired, VersionConflict
from codex.events.models import Event, EventKind
from codex.tasks.models import Task
from tests.factories import make_task, put_in_state


def db_row(task: Task) -> dict:
    return Task.objects.filter(pk=task.pk).values(
        "version", "branch", "pr_url", "status", "lease_holder"
    )[0]


def two_copies(task: Task) -> tuple[Task, Task]:
    return Task.objects.get(pk=task.pk), Task.objects.get(pk=task.pk)


@pytest.mark.django_db
class TestVersionBumps:
    def test_a_new_task_starts_at_version_1(self):
        task = make_task()
        assert task.version == 1
        assert db_row(task)["version"] == 1

    def test_every_save_raises_the_version_by_exactly_one(self):
        task = make_task()
        for expected in (2, 3, 4):
            task.branch = f"feat/{expected}"
            task.save()
            assert task.version == expected
            assert db_row(task)["version"] == expected

    def test_a_save_without_changes_still_raises_the_version(self):
        task = make_task()
        task.save()
        assert db_row(task)["version"] == 2

    def test_a_save_with_update_fields_raises_the_version_too(self):
        task = make_task()
        task.branch = "feat/x"
        task.save(update_fields=["branch"])
        row = db_row(task)
        assert (row["version"], row["branch"]) == (2, "feat/x")
        assert task.version == 2

    def test_lease_operations_each_raise_the_version_by_one(self):
        task = make_task()
        task.acquire_lease("worker:a")
        assert (task.version, db_row(task)["version"]) == (2, 2)
        task.renew_lease()
        assert (task.version, db_row(task)["version"]) == (3, 3)
        assert task.release_lease() is True
        assert (task.version, db_row(task)["version"]) == (4, 4)
        task.acquire_lease("worker:a")
        Task.objects.get(pk=task.pk).break_lease(by="operator:alice")
        assert db_row(task)["version"] == 6

    def test_a_transition_under_perform_costs_one_version(self):
        # One UPDATE takes the lease for its own length, writes the transition
        # and leaves the row without a lease: one write, one version.
        task = put_in_state(make_task(), status="in_progress", phase="planning")
        before = task.version
        task.perform("pause", by="user:alice")
        row = db_row(task)
        assert row["version"] == before + 1 == task.version
        assert (row["status"], row["lease_holder"]) == ("paused", None)


@pytest.mark.django_db
class TestTwoWriters:
    def test_the_second_stale_save_raises_version_mismatch(self):
        first, second = two_copies(make_task())
        first.branch = "feat/first"
        first.save()

        second.branch = "feat/second"
        second.pr_url = "https://github.com/acme/repo/pull/2"
        with pytest.raises(VersionConflict) as caught:
            second.save()

        assert caught.value.code == "version_mismatch"
        assert caught.value.expected == 1
        row = db_row(first)
        assert (row["version"], row["branch"], row["pr_url"]) == (2, "feat/first", "")
        # The refused copy keeps the version it read, so it does not pretend to
        # be current.
        assert second.version == 1

    def test_a_stale_save_with_update_fields_is_refused_too(self):
        first, second = two_copies(make_task())
        first.pr_url = "https://github.com/acme/repo/pull/1"
        first.save(update_fields=["pr_url"])
        second.branch = "feat/second"
        with pytest.raises(VersionConflict):
            second.save(update_fields=["branch"])
        row = db_row(first)
        assert (row["version"], row["branch"]) == (2, "")

    def test_the_retry_after_refresh_succeeds(self):
        first, second = two_copies(make_task())
        first.branch = "feat/first"
        first.save()
        second.pr_url = "https://github.com/acme/repo/pull/2"
        with pytest.raises(VersionConflict):
            second.save()

        second.refresh_from_db()
        assert second.branch == "feat/first"
        second.pr_url = "https://github.com/acme/repo/pull/2"
        second.save()

        row = db_row(first)
        assert row["version"] == 3 == second.version
        assert (row["branch"], row["pr_url"]) == (
            "feat/first",
            "https://github.com/acme/repo/pull/2",
        )

    def test_a_conflicting_save_writes_no_events(self):
        task = put_in_state(make_task(), status="in_progress", phase="planning")
        first, second = two_copies(task)
        first.branch = "feat/first"
        first.save()
        second.record(EventKind.ERROR, by="worker:b", reason="should not be logged")
        with pytest.raises(VersionConflict):
            second.save()
        assert not Event.objects.filter(task=task, kind=EventKind.ERROR).exists()

    def test_a_lease_operation_makes_other_copies_stale(self):
        first, second = two_copies(make_task())
        first.acquire_lease("worker:a")
        first.release_lease()
        second.branch = "feat/second"
        with pytest.raises(VersionConflict):
            second.save()

    def test_a_bulk_update_of_other_fields_bumps_the_version(self):
        task = make_task()
        stale = Task.objects.get(pk=task.pk)
        assert Task.objects.filter(pk=task.pk).update(branch="feat/bulk") == 1
        assert db_row(task)["version"] == 2
        stale.pr_url = "https://github.com/acme/repo/pull/9"
        with pytest.raises(VersionConflict):
            stale.save()

    def test_a_transition_on_a_stale_copy_is_refused(self):
        from django_fsm import TransitionNotAllowed

        task = put_in_state(make_task(), status="in_progress", phase="planning")
        first, stale = two_copies(task)
        first.perform("pause", by="user:alice")

        # `fail` is not allowed from paused; the stale copy still says in_progress.
        with pytest.raises((VersionConflict, TransitionNotAllowed)):
            stale.perform("fail", by="user:bob")

        assert db_row(task)["status"] == "paused"
        out_of_in_progress = Event.objects.filter(
            task=task, kind=EventKind.TRANSITION, field="status", source="in_progress"
        )
        assert out_of_in_progress.count() == 1

    def test_an_unsaved_state_change_on_a_stale_copy_conflicts_at_acquire(self):
        task = put_in_state(make_task(), status="in_progress", phase="planning")
        first, stale = two_copies(task)
        first.perform("pause", by="user:alice")
        stale.cancel(by="user:bob")  # changed in memory before taking the lease
        with pytest.raises(VersionConflict):
            stale.acquire_lease("user:bob")
        assert db_row(task)["status"] == "paused"
        assert db_row(task)["lease_holder"] is None


@pytest.mark.django_db
class TestBulkWritesAreRefused:
    @pytest.mark.parametrize("field", ["version", "status", "phase"])
    def test_queryset_update_of_protected_fields_is_refused(self, field):
        task = put_in_state(make_task(), status="in_progress", phase="planning")
        value = {"version": 99, "status": "completed", "phase": "release"}[field]
        with pytest.raises(LeaseRequired):
            Task.objects.filter(pk=task.pk).update(**{field: value})
        row = Task.objects.filter(pk=task.pk).values("version", "status", "phase")[0]
        assert row == {
            "version": task.version,
            "status": "in_progress",
            "phase": "planning",
        }

    def test_a_refused_update_is_refused_even_with_allowed_fields_alongside(self):
        task = make_task()
        with pytest.raises(LeaseRequired):
            Task.objects.filter(pk=task.pk).update(branch="x", version=1)
        assert db_row(task)["branch"] == ""

    def test_bulk_update_of_version_is_refused(self):
        task = make_task()
        task.version = 42
        with pytest.raises(LeaseRequired):
            Task.objects.bulk_update([task], ["version"])
        assert db_row(task)["version"] == 1

    def test_bulk_update_of_unprotected_fields_is_allowed(self):
        task = make_task()
        task.branch = "feat/bulk"
        assert Task.objects.bulk_update([task], ["branch"]) == 1
        assert db_row(task)["branch"] == "feat/bulk"


@pytest.mark.django_db
class TestStateChangesNeedTheLease:
    def test_saving_a_status_change_without_the_lease_is_refused(self):
        task = put_in_state(make_task(), status="in_progress", phase="planning")
        task.pause(by="user:alice")
        with pytest.raises(LeaseRequired):
            task.save()
        row = db_row(task)
        assert (row["status"], row["version"]) == ("in_progress", 2)

    def test_saving_a_status_change_with_the_lease_succeeds(self):
        task = put_in_state(make_task(), status="in_progress", phase="planning")
        task.acquire_lease("user:alice")
        task.pause(by="user:alice")
        task.save(release_lease=True)
        row = db_row(task)
        assert (row["status"], row["lease_holder"]) == ("paused", None)
        assert task.held_lease is None
