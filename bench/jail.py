"""The command jail's cost: the p50 time a trivial command (`true`) takes in
the jail (bubblewrap) against the same command run the same way without it
(CODEX_SANDBOX=none: the same supervisor, limits and environment), in the same
run. Goal: at most 30 ms added per command."""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

from bench.common import figure, not_measured

NAME = "jail_added_ms_per_command_p50"
GOAL = "<= 30 ms"


def _p50_ms(jail, runs: int) -> float:
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        result = jail.run(["true"])
        samples.append(time.perf_counter() - started)
        if result.exit_code != 0:
            raise RuntimeError(f"`true` failed in the jail: {result.output}")
    return statistics.median(samples) * 1000


def run(smoke: bool) -> list[dict]:
    from integrations.jail import Jail, JailUnavailable, Limits
    from integrations.jail.backends import HostBackend, backend_named

    try:
        jailed = backend_named("bubblewrap")
    except JailUnavailable as exc:
        return [not_measured(NAME, "ms", GOAL, f"no jail here: {exc}")]
    runs = 20 if smoke else 300
    limits = Limits(wall_seconds=30, cpu_seconds=30)
    with tempfile.TemporaryDirectory() as tmp:
        worktree = Path(tmp)
        inside = Jail(worktree=worktree, backend=jailed, limits=limits)
        outside = Jail(worktree=worktree, backend=HostBackend(), limits=limits)
        _p50_ms(inside, 3)  # warm the page cache and the probe
        without = _p50_ms(outside, runs)
        within = _p50_ms(inside, runs)
    added = within - without
    return [
        figure(
            NAME,
            added,
            "ms",
            goal=GOAL,
            meets=added <= 30,
            notes=(
                f"`true` {runs} times: p50 {within:.1f} ms in bubblewrap, "
                f"{without:.1f} ms unjailed through the same supervisor; "
                "the pipeline figures run with the jail on"
            ),
            jailed_ms=round(within, 2),
            unjailed_ms=round(without, 2),
        )
    ]
