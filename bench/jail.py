"""The command jail's cost per command, in two figures from the same run:

- the jail itself: the p50 time a trivial command (`true`) takes in bubblewrap
  against the same command run the same way without it (CODEX_SANDBOX=none:
  the same supervisor, cgroups, quota check and environment). Goal: at most
  30 ms added per command.
- the per-command limits: `true` through the supervisor with the command's
  own pids and memory cgroups and its worktree's quota check (a watcher and
  a walk at the end), against the same supervisor with neither. Goal: at
  most 10 ms added per command.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from bench.common import figure, not_measured

if TYPE_CHECKING:
    from integrations.jail import CommandResult

NAME = "jail_added_ms_per_command_p50"
GOAL = "<= 30 ms"
LIMITS_NAME = "jail_limits_added_ms_per_command_p50"
LIMITS_GOAL = "<= 10 ms"


def _p50_ms(
    first: Callable[[], CommandResult], second: Callable[[], CommandResult], runs: int
) -> tuple[float, float]:
    """The p50 of each command in ms, run in turns so that a machine getting
    busier or quieter during the run weighs on both alike."""
    samples: tuple[list[float], list[float]] = ([], [])
    for _ in range(runs):
        for command, kept in ((first, samples[0]), (second, samples[1])):
            started = time.perf_counter()
            result = command()
            kept.append(time.perf_counter() - started)
            if result.exit_code != 0:
                raise RuntimeError(f"`true` failed: {result.output}")
    return statistics.median(samples[0]) * 1000, statistics.median(samples[1]) * 1000


def run(smoke: bool) -> list[dict]:
    from integrations.jail import Jail, JailUnavailable, Limits
    from integrations.jail.backends import HostBackend, backend_named
    from integrations.jail.cgroups import CommandCgroup
    from integrations.jail.process import supervise

    try:
        jailed = backend_named("bubblewrap")
    except JailUnavailable as exc:
        return [not_measured(NAME, "ms", GOAL, f"no jail here: {exc}")]
    runs = 20 if smoke else 300
    limits = Limits(wall_seconds=30, cpu_seconds=30)
    probe = CommandCgroup(limits.max_processes, limits.memory_mb * 1024 * 1024)
    made = [("pids", probe.pids), ("memory", probe.memory)]
    cgroups = " and ".join(name for name, folder in made if folder is not None)
    probe.remove()
    with tempfile.TemporaryDirectory() as tmp:
        worktree = Path(tmp)
        inside = Jail(worktree=worktree, backend=jailed, limits=limits)
        outside = Jail(worktree=worktree, backend=HostBackend(), limits=limits)
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}

        def limited() -> CommandResult:
            return supervise(
                ["true"], env=env, cwd=worktree, limits=limits, watch={worktree: ""}
            )

        def bare() -> CommandResult:
            return supervise(
                ["true"], env=env, cwd=worktree, limits=limits, cgroup=False
            )

        def jailed_run() -> CommandResult:
            return inside.run(["true"])

        def unjailed_run() -> CommandResult:
            return outside.run(["true"])

        _p50_ms(jailed_run, limited, 3)  # warm the page cache and the probe
        within, without = _p50_ms(jailed_run, unjailed_run, runs)
        with_limits, unlimited = _p50_ms(limited, bare, runs)
    added = within - without
    limits_added = with_limits - unlimited
    return [
        figure(
            NAME,
            added,
            "ms",
            goal=GOAL,
            meets=added <= 30,
            notes=(
                f"`true` {runs} times each, in turns: p50 {within:.1f} ms in "
                f"bubblewrap, {without:.1f} ms unjailed through the same "
                "supervisor (its cgroups and quota check in both); the pipeline "
                "figures run with the jail on"
            ),
            jailed_ms=round(within, 2),
            unjailed_ms=round(without, 2),
        ),
        figure(
            LIMITS_NAME,
            limits_added,
            "ms",
            goal=LIMITS_GOAL,
            meets=limits_added <= 10,
            notes=(
                f"`true` {runs} times each, in turns, through the supervisor: p50 "
                f"{with_limits:.1f} ms with its own cgroups "
                f"({cgroups or 'none could be made here'}) and the worktree's "
                f"quota check, {unlimited:.1f} ms with neither"
            ),
            limited_ms=round(with_limits, 2),
            unlimited_ms=round(unlimited, 2),
            cgroups=cgroups,
        ),
    ]
