"""A call returns at its limit with nothing of the command left behind:
setsid grandchildren, descendants holding stdout, fork bombs, memory hogs,
CPU burners and runaway files are all stopped, and the next call works."""

from __future__ import annotations

import time

from integrations.jail import Jail, Limits

ESCAPE = r"""
import os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        while True:
            with open("/workspace/beat", "a") as f:
                f.write("x")
            time.sleep(0.05)
    os._exit(0)
time.sleep(0.3)
print("parent done", flush=True)
"""


def limited(jail: Jail, **limits) -> Jail:
    base = {"wall_seconds": 10, "cpu_seconds": 10, "output_chars": 4000}
    return Jail(
        worktree=jail.worktree,
        backend=jail.backend,
        limits=Limits(**{**base, **limits}),
    )


def test_a_setsid_grandchild_is_gone_when_the_call_returns(jail):
    result = jail.run(["python3", "-c", ESCAPE])
    assert "parent done" in result.output
    beat = jail.worktree / "beat"
    assert beat.exists()
    size = beat.stat().st_size
    time.sleep(0.5)
    assert beat.stat().st_size == size, "a descendant outlived the call"


def test_a_descendant_holding_stdout_does_not_hold_the_call(jail):
    started = time.monotonic()
    result = limited(jail, wall_seconds=2).run(
        ["bash", "-c", "sleep 40 & echo started"]
    )
    assert "started" in result.output
    assert time.monotonic() - started < 6
    started = time.monotonic()
    result = limited(jail, wall_seconds=2).run(
        ["bash", "-c", "(setsid sleep 40 &); sleep 40"]
    )
    assert result.timed_out and result.exit_code is None
    assert time.monotonic() - started < 6


def test_a_fork_bomb_is_stopped_and_the_next_call_works(jail):
    bomb = limited(jail, wall_seconds=5, max_processes=32)
    started = time.monotonic()
    result = bomb.run(["bash", "-c", "b() { b | b & }; b; sleep 2; echo survived"])
    assert time.monotonic() - started < 10
    assert "fork" in result.output.lower() or "resource" in result.output.lower()
    after = jail.run(["bash", "-c", "echo still here"])
    assert after.exit_code == 0 and "still here" in after.output


def test_a_memory_hog_is_stopped(jail):
    hog = limited(jail, memory_mb=256)
    result = hog.run(
        ["python3", "-c", "b = bytearray(2 * 1024**3); print('ALLOCATED')"]
    )
    assert "ALLOCATED" not in result.output
    assert result.exit_code not in (0, None)
    # A memory cgroup kills it (and says so); without one, RLIMIT_DATA refuses.
    assert "out of memory" in result.output or "MemoryError" in result.output


def test_cpu_time_and_file_size_are_limited(jail):
    started = time.monotonic()
    burner = limited(jail, cpu_seconds=1, wall_seconds=20)
    result = burner.run(["python3", "-c", "while True: pass"])
    assert not result.timed_out and result.exit_code != 0
    assert time.monotonic() - started < 10
    big = limited(jail, max_file_mb=1).run(
        ["bash", "-c", "head -c 3000000 /dev/zero > big.bin; echo rc=$?"]
    )
    assert (jail.worktree / "big.bin").stat().st_size <= 1024 * 1024
    assert "rc=0" not in big.output


def test_a_timeout_that_is_no_finite_number_is_refused(jail):
    import pytest

    for timeout in (float("nan"), float("inf"), -1, 0):
        with pytest.raises(ValueError):
            jail.run(["true"], timeout=timeout)
    # A longer timeout than configured is cut to the configured one.
    assert jail.limits.with_wall(10_000).wall_seconds == jail.limits.wall_seconds


def test_long_output_keeps_its_beginning_and_its_end(jail):
    script = "print('FIRST'); print('x' * 100000); print('LAST SUMMARY')"
    result = jail.run(["python3", "-c", script])
    assert result.output.startswith("FIRST")
    assert result.output.rstrip().endswith("LAST SUMMARY")
    assert "output cut" in result.output
    assert len(result.output) < 21_000
