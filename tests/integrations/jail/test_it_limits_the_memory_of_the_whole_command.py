"""One memory limit for the whole command, not one per process: two
processes of 1.2 GB under a 2 GB limit end out of memory, the result says
so, the whole command is stopped, and what the command keeps in its tmpfs
folders counts within the same limit. Each test allocates gigabytes: the
machine's memory is shared, so they run one at a time (never in parallel)."""

from __future__ import annotations

import time

import pytest

from integrations.jail import Jail, Limits
from integrations.jail.cgroups import CommandCgroup

TWO_HOGS = r"""
import os, time
children = []
for _ in range(2):
    pid = os.fork()
    if pid == 0:
        block = b"x" * (1200 * 1024 * 1024)
        print("HELD", flush=True)
        time.sleep(30)
        os._exit(0)
    children.append(pid)
for pid in children:
    os.waitpid(pid, 0)
print("BOTH DONE", flush=True)
"""


@pytest.fixture(autouse=True)
def memory_cgroup():
    group = CommandCgroup(None, 64 * 1024 * 1024)
    try:
        if group.memory is None:
            pytest.skip("no memory cgroup can be made here (RLIMIT_DATA stands in)")
    finally:
        group.remove()


def limited(jail: Jail, **limits) -> Jail:
    base = {"wall_seconds": 60, "cpu_seconds": 60, "output_chars": 4000}
    return Jail(
        worktree=jail.worktree,
        backend=jail.backend,
        limits=Limits(**{**base, **limits}),
    )


def test_two_processes_of_1200_mb_under_2048_mb_end_out_of_memory(jail):
    started = time.monotonic()
    result = limited(jail, memory_mb=2048).run(["python3", "-c", TWO_HOGS])
    assert time.monotonic() - started < 20, "the command was not stopped whole"
    assert "BOTH DONE" not in result.output
    assert result.limit == "memory" and not result.ok
    assert "out of memory" in result.note
    assert "memory limit of 2048 MB" in result.output
    after = jail.run(["bash", "-c", "echo still here"])
    assert after.ok and "still here" in after.output


def test_files_in_tmp_count_within_the_memory_limit(jail):
    # 200 MB in /tmp (within its 256 MB) and 400 MB in a process: each fits
    # the 512 MB limit alone, not together.
    script = (
        "head -c 200M /dev/zero > /tmp/kept && echo KEPT && "
        'python3 -c \'b = b"x" * (400 * 1024 * 1024); print("ALLOCATED")\''
    )
    result = limited(jail, memory_mb=512).run(["bash", "-c", script])
    assert "KEPT" in result.output
    assert "ALLOCATED" not in result.output
    assert result.limit == "memory" and "out of memory" in result.note
