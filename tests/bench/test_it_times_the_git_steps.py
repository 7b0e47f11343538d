"""The git steps' figures (bench/git_steps.py) on a tiny generated repository:
every step timed against bare git, a live task's disk, and nothing left of a
task once cleaned up."""

from __future__ import annotations

from bench.git_steps import STEP_NOTES, run


def test_each_step_is_timed_against_bare_git_and_nothing_is_left(tmp_path):
    figures = {f["name"]: f for f in run(True, files=200, commits=20, root=tmp_path)}
    for step in STEP_NOTES:
        timed = figures[f"git_{step}_cpu_seconds"]
        assert timed["value"] > 0 and timed["ceiling"] > 0, timed
        assert timed["wall_seconds"] > 0 and "wall clock" in timed["notes"]
        assert timed["goal"] == "<= 1.3x bare git"
    disk = figures["git_disk_per_live_task_mb"]
    assert disk["value"] > 0 and "the checkout" in disk["notes"]
    left = figures["git_bytes_left_after_cleanup"]
    assert left["value"] == 0 and left["meets_goal"], left
    # The run's own folder goes; the generated repository is kept.
    assert [p.name for p in tmp_path.iterdir()] == ["repositories"]
