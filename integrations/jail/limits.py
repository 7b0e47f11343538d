"""What one jailed command may use: time, CPU, memory, processes, file size.

The wall-clock limit is enforced by the supervisor (`process.supervise`); the
others by the kernel, as resource limits set in the child before the backend
starts, and, where Codex may create one, a pids cgroup of the command's own.

Why a cgroup: the kernel does not count RLIMIT_NPROC for processes whose real
user is root outside their user namespace, and a worker running as root maps
the jail's user to root. The cgroup holds there; elsewhere the rlimit does.
"""

from __future__ import annotations

import contextlib
import math
import os
import resource
import time
import uuid
from dataclasses import dataclass, replace
from pathlib import Path

MEGABYTE = 1024 * 1024

# Where a pids controller may be mounted: cgroup v2's unified tree, or v1's.
CGROUP_ROOTS = (Path("/sys/fs/cgroup"), Path("/sys/fs/cgroup/unified"))
CGROUP_V1_PIDS = Path("/sys/fs/cgroup/pids")


@dataclass(frozen=True)
class Limits:
    """The limits of one command. Every field is finite and positive."""

    wall_seconds: float = 120.0
    cpu_seconds: int = 120
    memory_mb: int = 2048
    max_processes: int = 256
    max_file_mb: int = 512
    output_chars: int = 20_000

    def __post_init__(self) -> None:
        for name in (
            "wall_seconds",
            "cpu_seconds",
            "memory_mb",
            "max_processes",
            "max_file_mb",
            "output_chars",
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

    def rlimits(self) -> list[tuple[int, int]]:
        """(resource, value) pairs set in the child before it starts."""
        pairs = [
            (resource.RLIMIT_CPU, int(self.cpu_seconds)),
            # The data segment, not the address space: runtimes such as V8 and
            # Go reserve far more address space than they ever use.
            (resource.RLIMIT_DATA, int(self.memory_mb) * MEGABYTE),
            (resource.RLIMIT_FSIZE, int(self.max_file_mb) * MEGABYTE),
            (resource.RLIMIT_CORE, 0),
        ]
        if os.geteuid() != 0:
            pairs.append((resource.RLIMIT_NPROC, int(self.max_processes)))
        return pairs


def apply_rlimits(pairs: list[tuple[int, int]]) -> None:
    """Lower each limit (never raise a hard limit the worker does not have)."""
    for which, value in pairs:
        _soft, hard = resource.getrlimit(which)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        resource.setrlimit(which, (value, value))


class PidsCgroup:
    """A pids cgroup for one command, when this process may create one.

    `path` is None where no writable pids controller exists (or none was
    asked for); the command then relies on RLIMIT_NPROC alone.
    """

    def __init__(self, max_processes: int | None) -> None:
        self.path: Path | None = None
        parent = _writable_pids_root() if max_processes else None
        if parent is None:
            return
        path = parent / f"codex-jail-{uuid.uuid4().hex[:12]}"
        try:
            path.mkdir()
            (path / "pids.max").write_text(str(int(max_processes)))
        except OSError:
            with contextlib.suppress(OSError):
                path.rmdir()
            return
        self.path = path

    def procs_file(self) -> str | None:
        """The file a child writes its pid to, to join the cgroup."""
        return str(self.path / "cgroup.procs") if self.path else None

    def kill_all(self) -> None:
        """SIGKILL every process still in the cgroup."""
        if self.path is None:
            return
        with contextlib.suppress(OSError):
            for line in (self.path / "cgroup.procs").read_text().split():
                with contextlib.suppress(ProcessLookupError, ValueError):
                    os.kill(int(line), 9)

    def remove(self) -> None:
        """Remove the cgroup (it must be empty: killed processes leave it as
        the kernel reaps them, so a few tries may be needed)."""
        if self.path is None:
            return
        for _ in range(50):
            try:
                self.path.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:
                self.kill_all()
                time.sleep(0.01)


_PIDS_ROOT: list[Path | None] = []


def _writable_pids_root() -> Path | None:
    """The cgroup folder new pids cgroups go under, found once per process."""
    if _PIDS_ROOT:
        return _PIDS_ROOT[0]
    found = None
    candidates = [CGROUP_V1_PIDS]
    for root in CGROUP_ROOTS:
        controllers = root / "cgroup.subtree_control"
        with contextlib.suppress(OSError):
            if "pids" in controllers.read_text().split():
                candidates.insert(0, root)
    for candidate in candidates:
        is_cgroup = (candidate / "cgroup.procs").exists()
        if is_cgroup and os.access(candidate, os.W_OK):
            found = candidate
            break
    _PIDS_ROOT.append(found)
    return found
