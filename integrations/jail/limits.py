"""What one jailed command may use: time, CPU, memory, processes, file size,
its tmpfs folders and its worktree's disk.

The wall-clock limit and the worktree's quota are enforced by the supervisor
(`process.supervise`, `quota.QuotaWatch`); processes and memory by cgroups of
the command's own where Codex may create them (`cgroups.CommandCgroup`); the
rest by the kernel, as resource limits set in the child before the backend
starts. Where no cgroup can be made, RLIMIT_NPROC and RLIMIT_DATA stand in
for it (per process, so weaker). docs/jail.md has the table.
"""

from __future__ import annotations

import math
import os
import resource
from dataclasses import dataclass, replace

MEGABYTE = 1024 * 1024

# The share of the memory limit each of the jail's tmpfs folders may hold:
# they add up to the limit, so even where no memory cgroup counts them
# together they cannot hold more than it.
TMPFS_SHARES = {"/tmp": 0.5, "home": 0.25, "/dev/shm": 0.25}


@dataclass(frozen=True)
class Limits:
    """The limits of one command. Every field is finite and positive."""

    wall_seconds: float = 120.0
    cpu_seconds: int = 120
    memory_mb: int = 2048
    max_processes: int = 256
    max_file_mb: int = 512
    output_chars: int = 20_000
    worktree_quota_mb: int = 1024

    def __post_init__(self) -> None:
        for name in (
            "wall_seconds",
            "cpu_seconds",
            "memory_mb",
            "max_processes",
            "max_file_mb",
            "output_chars",
            "worktree_quota_mb",
        ):
            value = getattr(self, name)
            if not isinstance(value, int | float) or isinstance(value, bool):
                raise ValueError(f"{name} must be a number, not {value!r}")
            if not math.isfinite(value) or value <= 0:
                raise ValueError(f"{name} must be a finite positive number")

    def with_wall(self, seconds: float | None) -> Limits:
        """These limits with a wall time of at most `seconds` (never more than
        the configured one); CPU time follows it down."""
        if seconds is None:
            return self
        seconds = float(seconds)
        if not math.isfinite(seconds) or seconds <= 0:
            raise ValueError("a timeout must be a finite positive number of seconds")
        wall = min(seconds, self.wall_seconds)
        return replace(
            self,
            wall_seconds=wall,
            cpu_seconds=max(1, min(self.cpu_seconds, math.ceil(wall))),
        )

    def tmpfs_bytes(self, folder: str) -> int:
        """The size of the jail's tmpfs `folder` (/tmp, home, /dev/shm)."""
        return int(self.memory_mb * MEGABYTE * TMPFS_SHARES[folder])

    def rlimits(
        self, *, memory_cgroup: bool = False, pids_cgroup: bool = False
    ) -> list[tuple[int, int]]:
        """(resource, value) pairs set in the child before it starts; the
        memory and process limits only where no cgroup holds them."""
        pairs = [
            (resource.RLIMIT_CPU, int(self.cpu_seconds)),
            (resource.RLIMIT_FSIZE, int(self.max_file_mb) * MEGABYTE),
            (resource.RLIMIT_CORE, 0),
        ]
        if not memory_cgroup:
            # The data segment, not the address space: runtimes such as V8 and
            # Go reserve far more address space than they ever use.
            pairs.append((resource.RLIMIT_DATA, int(self.memory_mb) * MEGABYTE))
        if not pids_cgroup and os.geteuid() != 0:
            pairs.append((resource.RLIMIT_NPROC, int(self.max_processes)))
        return pairs


def apply_rlimits(pairs: list[tuple[int, int]]) -> None:
    """Lower each limit (never raise a hard limit the worker does not have)."""
    for which, value in pairs:
        _soft, hard = resource.getrlimit(which)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        resource.setrlimit(which, (value, value))
