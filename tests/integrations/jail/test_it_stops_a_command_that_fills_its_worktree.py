"""A worktree holds at most its disk quota: a command writing past it is
stopped while it runs (not when it ends), and told what fills the worktree;
a worktree already over its quota may shrink but not grow; a QA check's
output folder counts too, and so do files deleted while still written; a
folder nested too deep to measure counts as over; the measure follows no
symlink out of the worktree and counts a hard-linked file once."""

from __future__ import annotations

import os
import time

from integrations.jail import Jail, Limits
from integrations.jail.quota import MEGABYTE, disk_usage


def limited(jail: Jail, quota_mb: int = 50) -> Jail:
    limits = Limits(wall_seconds=60, cpu_seconds=60, worktree_quota_mb=quota_mb)
    return Jail(worktree=jail.worktree, backend=jail.backend, limits=limits)


def test_a_command_writing_past_the_quota_is_stopped_while_it_runs(jail):
    started = time.monotonic()
    result = limited(jail).run(
        [
            "bash",
            "-c",
            "mkdir -p data/raw && head -c 80M /dev/zero > data/raw/big.bin; "
            "sleep 30; echo STILL RUNNING",
        ]
    )
    assert time.monotonic() - started < 15, "stopped only when it ended"
    assert "STILL RUNNING" not in result.output
    assert result.limit == "disk" and not result.ok and not result.timed_out
    assert result.note.startswith("stopped: the command wrote past")
    assert "past the worktree's disk quota of 50 MB" in result.note
    assert "data/raw/big.bin" in result.note


def test_many_small_files_are_stopped_and_the_folder_holding_them_named(jail):
    result = limited(jail).run(
        [
            "bash",
            "-c",
            "for i in $(seq 300); do head -c 1M /dev/zero > f$i; done; "
            "sleep 30; echo STILL RUNNING",
        ]
    )
    assert "STILL RUNNING" not in result.output
    assert result.limit == "disk"
    assert "./ (" in result.note and " files)" in result.note
    assert len(list(jail.worktree.glob("f*"))) < 300


def test_a_worktree_over_its_quota_may_shrink_but_not_grow(jail):
    (jail.worktree / "checkout.bin").write_bytes(b"x" * 60 * MEGABYTE)
    grow = limited(jail).run(["bash", "-c", "head -c 20M /dev/zero > more; sleep 30"])
    assert grow.limit == "disk"
    assert "more than the" in grow.note and "it held at the start" in grow.note
    shrink = limited(jail).run(["bash", "-c", "rm checkout.bin more; echo CLEANED"])
    assert shrink.ok and "CLEANED" in shrink.output


def test_a_check_output_folder_counts_within_the_quota(jail, tmp_path):
    outputs = tmp_path / "outputs"
    outputs.mkdir()
    result = limited(jail).run(
        ["bash", "-c", "head -c 80M /dev/zero > /codex/out/report.xml; sleep 30"],
        outputs=outputs,
    )
    assert result.limit == "disk"
    assert "/codex/out/report.xml" in result.note


DELETED_WRITER = r"""
import os, time
kept = []
for number in range(4):
    handle = open(f"hidden{number}", "wb")
    os.unlink(f"hidden{number}")
    handle.write(b"x" * (30 * 1024 * 1024))
    handle.flush()
    kept.append(handle)
print("WROTE", flush=True)
time.sleep(30)
print("STILL RUNNING", flush=True)
"""


def test_files_deleted_while_still_written_count_too(jail):
    started = time.monotonic()
    result = limited(jail).run(["python3", "-c", DELETED_WRITER])
    assert time.monotonic() - started < 15
    assert "STILL RUNNING" not in result.output
    assert result.limit == "disk"
    assert "deleted while still writing them" in result.note


def test_a_folder_nested_too_deep_to_measure_counts_as_over(jail):
    script = (
        "name=$(printf 'a%.0s' $(seq 200)); "
        "for i in $(seq 25); do mkdir $name && cd $name || exit 3; done; "
        "echo x > deep.txt && echo MADE"
    )
    result = limited(jail).run(["bash", "-c", script])
    assert "MADE" in result.output
    assert result.limit == "disk"
    assert "nested too deep to measure" in result.note


def test_the_measure_follows_no_symlink_and_counts_a_hard_link_once(tmp_path):
    worktree = tmp_path / "worktree"
    worktree.mkdir()
    (worktree / "usr").symlink_to("/usr")
    (worktree / "data").write_bytes(b"x" * 10 * MEGABYTE)
    for number in range(5):
        os.link(worktree / "data", worktree / f"link{number}")
    assert 10 * MEGABYTE <= disk_usage([worktree]) < 11 * MEGABYTE
