"""The stale-work job runs every two minutes. It judged the folders under the
worktree root against every live worktree (each active task's, each running
instance's), read and resolved on every run and compared with every folder:
work that grew with the active tasks even with nothing to judge. The live set
is now read only when a folder is old enough to be judged, and each folder is
looked up in it once."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from codex.fleet.heartbeats import reap_stale_work, remove_orphaned_worktrees
from tests.factories import make_task, put_in_state

pytestmark = pytest.mark.django_db


def old_folder(path: Path) -> Path:
    path.mkdir(parents=True)
    stamp = (datetime.now(UTC) - timedelta(days=1)).timestamp()
    os.utime(path, (stamp, stamp))
    return path


def live_set_queries(settings, root: Path) -> list[str]:
    settings.CODEX_WORKTREE_ROOT = str(root)
    settings.CODEX_MIRROR_ROOT = str(root.parent / "no-mirrors")
    with CaptureQueriesContext(connection) as captured:
        reap_stale_work()
    return [
        q["sql"]
        for q in captured.captured_queries
        if '"tasks_task"."task_id"' in q["sql"] or "worktree_path" in q["sql"]
    ]


def test_an_empty_root_reads_no_live_set(settings, tmp_path):
    for number in range(3):
        put_in_state(make_task(title=f"Active {number}"), status="in_progress")
    root = tmp_path / "worktrees"
    root.mkdir()
    assert live_set_queries(settings, root) == []


def test_an_old_folder_is_judged_against_the_live_set(settings, tmp_path):
    task = put_in_state(make_task(), status="in_progress")
    root = tmp_path / "worktrees"
    live = old_folder(root / task.task_id)
    orphan = old_folder(root / "FEAT-20260101-gone01")
    assert live_set_queries(settings, root)  # read, once there is a folder
    assert live.exists()
    assert not orphan.exists()


def test_a_folder_holding_a_live_worktree_deeper_down_stays(tmp_path):
    root = tmp_path / "worktrees"
    repository = old_folder(root / "acme-shop")
    other = old_folder(root / "acme-blog")
    deep = str(repository / "work-1-a1")
    assert remove_orphaned_worktrees(root, iter([deep, ""])) == [other.resolve()]
    assert repository.exists()
