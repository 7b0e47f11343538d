"""Reaping silent work: runs and instances whose heartbeat is older than
CODEX_HEARTBEAT_STALE_SECONDS (300), and worktrees no live instance owns."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from codex.events.models import Event
from codex.fleet.heartbeats import (
    ACTOR,
    reap_stale_work,
    remove_orphaned_worktrees,
)
from codex.fleet.models import AgentInstance, AgentRun, InstanceType
from tests.factories import make_task, put_in_state
from tests.fleet.factories import make_instance

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
STALE = timedelta(seconds=301)  # more than CODEX_HEARTBEAT_STALE_SECONDS = 300
FRESH = timedelta(seconds=299)
ADVANCE = "codex.tasks.jobs.advance_task"


@pytest.fixture
def clock(time_machine):
    time_machine.move_to(T0, tick=False)
    return time_machine


@pytest.fixture(autouse=True)
def _no_worktree_root(settings):
    settings.CODEX_WORKTREE_ROOT = None
    settings.CODEX_HEARTBEAT_STALE_SECONDS = 300


def reap(django_capture_on_commit_callbacks) -> dict[str, list[str]]:
    with django_capture_on_commit_callbacks(execute=True):
        return reap_stale_work()


def running_run(task=None, *, beat: bool = True) -> AgentRun:
    run = AgentRun.objects.begin(by="worker:test", task=task)
    if beat:
        run.beat()
    return run


# -- runs ---------------------------------------------------------------------


def test_a_silent_run_is_failed_and_its_task_requeued(
    clock, enqueued, django_capture_on_commit_callbacks
):
    task = put_in_state(make_task(), status="in_progress", phase="implementation")
    run = running_run(task)
    clock.move_to(T0 + STALE)

    done = reap(django_capture_on_commit_callbacks)

    run.refresh_from_db()
    assert run.status == "failed" and run.ended_at == T0 + STALE
    assert "no heartbeat since 2026-03-02 09:00:00" in run.error
    event = Event.objects.filter(subject=f"run:{run.session_id}").latest("id")
    assert (event.actor, event.source, event.target) == (ACTOR, "running", "failed")
    assert enqueued == [((ADVANCE, task.task_id), {"sync": False})]
    assert done["runs_failed"] == [run.session_id]
    assert done["tasks_requeued"] == [task.task_id]


def test_a_run_that_beat_299_seconds_ago_is_left_running(
    clock, enqueued, django_capture_on_commit_callbacks
):
    run = running_run(make_task())
    clock.move_to(T0 + FRESH)

    assert reap(django_capture_on_commit_callbacks)["runs_failed"] == []

    run.refresh_from_db()
    assert run.status == "running" and enqueued == []


def test_the_latest_heartbeat_counts_not_the_start(
    clock, django_capture_on_commit_callbacks
):
    run = running_run()
    clock.move_to(T0 + timedelta(hours=1))
    run.beat()
    clock.shift(FRESH)
    assert reap(django_capture_on_commit_callbacks)["runs_failed"] == []


def test_a_run_that_never_beat_is_judged_by_its_start(
    clock, django_capture_on_commit_callbacks
):
    fresh = running_run(beat=False)
    clock.move_to(T0 + FRESH)
    assert reap(django_capture_on_commit_callbacks)["runs_failed"] == []
    clock.move_to(T0 + STALE)
    assert reap(django_capture_on_commit_callbacks)["runs_failed"] == [fresh.session_id]


def test_finished_runs_are_not_touched(clock, django_capture_on_commit_callbacks):
    run = running_run()
    run.perform("succeed", by="worker:test")
    clock.move_to(T0 + timedelta(days=1))
    assert reap(django_capture_on_commit_callbacks)["runs_failed"] == []
    run.refresh_from_db()
    assert run.status == "succeeded"


@pytest.mark.parametrize("status", ["paused", "escalated", "blocked", "cancelled"])
def test_a_task_nobody_should_pick_up_is_not_requeued(
    clock, enqueued, django_capture_on_commit_callbacks, status
):
    task = put_in_state(make_task(), status=status, phase="implementation")
    run = running_run(task)
    clock.move_to(T0 + STALE)

    done = reap(django_capture_on_commit_callbacks)

    assert done["runs_failed"] == [run.session_id]
    assert done["tasks_requeued"] == [] and enqueued == []


def test_reaping_twice_fails_a_run_once(
    clock, enqueued, django_capture_on_commit_callbacks
):
    task = put_in_state(make_task(), status="in_progress", phase="implementation")
    running_run(task)
    clock.move_to(T0 + STALE)
    reap(django_capture_on_commit_callbacks)
    again = reap(django_capture_on_commit_callbacks)
    assert again["runs_failed"] == [] and len(enqueued) == 1


def test_a_heartbeat_after_the_scan_keeps_the_run(
    clock, monkeypatch, django_capture_on_commit_callbacks
):
    """Heartbeats do not bump the version, so the staleness is checked again on
    the locked row before the run is failed."""
    run = running_run()
    clock.move_to(T0 + STALE)
    queryset_class = type(AgentRun.objects.all())
    scan = queryset_class.values_list

    def beat_right_after_the_scan(self, *fields, **kwargs):
        rows = list(scan(self, *fields, **kwargs))
        AgentRun.objects.get(pk=run.pk).beat()
        return rows

    monkeypatch.setattr(queryset_class, "values_list", beat_right_after_the_scan)

    assert reap(django_capture_on_commit_callbacks)["runs_failed"] == []
    run.refresh_from_db()
    assert run.status == "running"


# -- instances ------------------------------------------------------------------


def test_a_silent_instance_is_terminated_and_a_live_one_kept(
    clock, django_capture_on_commit_callbacks
):
    silent = make_instance(issue_number=1)
    silent.beat()
    clock.move_to(T0 + timedelta(minutes=1))
    alive = make_instance(issue_number=2)
    alive.beat()
    clock.move_to(T0 + STALE)

    done = reap(django_capture_on_commit_callbacks)

    assert done["instances_terminated"] == [silent.instance_id]
    silent.refresh_from_db()
    alive.refresh_from_db()
    assert (silent.status, silent.ended_at) == ("terminated", T0 + STALE)
    assert alive.status == "started"
    event = Event.objects.filter(subject=f"instance:{silent.instance_id}").latest("id")
    assert (event.actor, event.target) == (ACTOR, "terminated")
    assert "no heartbeat" in event.reason


def test_an_instance_that_never_beat_is_judged_by_its_last_activity(
    clock, django_capture_on_commit_callbacks
):
    instance = make_instance(type=InstanceType.PLANNING)
    clock.move_to(T0 + FRESH)
    assert reap(django_capture_on_commit_callbacks)["instances_terminated"] == []
    clock.move_to(T0 + STALE)
    assert reap(django_capture_on_commit_callbacks)["instances_terminated"] == [
        instance.instance_id
    ]


def test_terminated_instances_are_not_touched_again(
    clock, django_capture_on_commit_callbacks
):
    instance = make_instance()
    instance.perform("terminate", by="user:alice", reason="done")
    clock.move_to(T0 + timedelta(days=1))
    assert reap(django_capture_on_commit_callbacks)["instances_terminated"] == []
    assert Event.objects.filter(actor=ACTOR).count() == 0


def test_the_stale_period_comes_from_the_setting(
    clock, settings, django_capture_on_commit_callbacks
):
    settings.CODEX_HEARTBEAT_STALE_SECONDS = 60
    run = running_run()
    clock.move_to(T0 + timedelta(seconds=61))
    assert reap(django_capture_on_commit_callbacks)["runs_failed"] == [run.session_id]


# -- worktrees ------------------------------------------------------------------


def make_dir(path: Path, *, age: timedelta | None = None) -> Path:
    path.mkdir(parents=True)
    (path / "README.md").write_text("work in progress\n")
    if age is not None:
        stamp = (datetime.now(UTC) - age).timestamp()
        os.utime(path, (stamp, stamp))
    return path


def test_orphaned_worktrees_go_live_ones_and_outside_paths_stay(tmp_path):
    root = tmp_path / "worktrees"
    live = make_dir(root / "work-1-a1")
    orphan = make_dir(root / "work-2-a1")
    nested_live = make_dir(root / "acme-repo" / "work-3-a1")
    outside = make_dir(tmp_path / "elsewhere")
    (root / "link-out").symlink_to(outside, target_is_directory=True)
    (root / "stray-file.txt").write_text("not a worktree")

    removed = remove_orphaned_worktrees(
        root, {str(live), str(nested_live), str(outside), ""}
    )

    assert removed == [orphan]
    assert not orphan.exists()
    assert live.exists() and (live / "README.md").exists()
    assert nested_live.exists()  # its repository folder is its ancestor
    assert (outside / "README.md").exists()  # a link out is never followed
    assert (root / "link-out").is_symlink()
    assert (root / "stray-file.txt").exists()


def test_a_link_to_an_orphan_outside_the_root_deletes_nothing_there(tmp_path):
    root = make_dir(tmp_path / "worktrees")
    victim = make_dir(tmp_path / "important")
    (root / "work-9-a1").symlink_to(victim, target_is_directory=True)

    assert remove_orphaned_worktrees(root, set()) == []
    assert (victim / "README.md").exists()


def test_live_paths_are_compared_after_resolving_links(tmp_path):
    root = tmp_path / "worktrees"
    worktree = make_dir(root / "work-1-a1")
    alias = tmp_path / "alias"
    alias.symlink_to(root, target_is_directory=True)

    assert remove_orphaned_worktrees(root, {str(alias / "work-1-a1")}) == []
    assert worktree.exists()


def test_a_root_inside_a_live_worktree_is_left_whole(tmp_path):
    root = tmp_path / "worktrees"
    make_dir(root / "work-2-a1")
    assert remove_orphaned_worktrees(root, {str(tmp_path)}) == []
    assert (root / "work-2-a1").exists()


def test_a_missing_root_removes_nothing(tmp_path):
    assert remove_orphaned_worktrees(tmp_path / "missing", set()) == []


def test_recently_created_folders_are_kept_for_a_grace_period(tmp_path):
    """A worker may create the worktree before its instance row is committed."""
    root = tmp_path / "worktrees"
    old = make_dir(root / "work-1-a1", age=timedelta(minutes=10))
    new = make_dir(root / "work-2-a1", age=timedelta(minutes=1))
    cutoff = datetime.now(UTC) - timedelta(minutes=5)

    assert remove_orphaned_worktrees(root, set(), older_than=cutoff) == [old]
    assert new.exists()


def test_reaping_removes_the_worktrees_of_dead_instances(
    tmp_path, settings, django_capture_on_commit_callbacks
):
    """End to end, on the real clock (file times are real): the instance that
    went silent is terminated and its worktree removed; the live one's stays."""
    root = tmp_path / "worktrees"
    settings.CODEX_WORKTREE_ROOT = str(root)
    dead_path = make_dir(root / "work-1-a1", age=timedelta(hours=1))
    live_path = make_dir(root / "work-2-a1", age=timedelta(hours=1))
    dead = make_instance(issue_number=1)
    AgentInstance._base_manager.filter(pk=dead.pk).update(
        worktree_path=str(dead_path), heartbeat_at=timezone.now() - timedelta(hours=1)
    )
    live = make_instance(issue_number=2)
    AgentInstance._base_manager.filter(pk=live.pk).update(worktree_path=str(live_path))
    live.beat()

    done = reap(django_capture_on_commit_callbacks)

    assert done["instances_terminated"] == [dead.instance_id]
    assert done["worktrees_removed"] == [str(dead_path.resolve())]
    assert not dead_path.exists() and live_path.exists()


def test_no_worktree_root_means_no_folder_is_touched(
    tmp_path, settings, django_capture_on_commit_callbacks
):
    orphan = make_dir(tmp_path / "work-1-a1", age=timedelta(hours=1))
    settings.CODEX_WORKTREE_ROOT = None
    assert reap(django_capture_on_commit_callbacks)["worktrees_removed"] == []
    assert orphan.exists()


@pytest.mark.django_db
def test_a_running_tasks_worktree_is_never_an_orphan(settings, tmp_path):
    """The phase runner's worktree (<root>/<task_id>) lives as long as its task,
    however long a phase runs; a finished task's is removed."""
    import os
    import time as _time

    from codex.fleet.heartbeats import reap_stale_work
    from tests.factories import make_task, put_in_state

    settings.CODEX_WORKTREE_ROOT = str(tmp_path)
    active = put_in_state(make_task(), status="in_progress")
    finished = put_in_state(make_task(), status="completed")
    for task in (active, finished):
        folder = tmp_path / task.task_id
        folder.mkdir()
        old = _time.time() - 3600
        os.utime(folder, (old, old))
    reap_stale_work()
    assert (tmp_path / active.task_id).exists()
    assert not (tmp_path / finished.task_id).exists()
