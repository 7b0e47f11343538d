"""The cgroups of one command: a pids and a memory limit for the whole of it.

Each call gets cgroups of its own, joined by its first process before the
backend starts, so every descendant is counted: a fork bomb meets `pids.max`
and two processes of 1.2 GB meet one memory limit together (a per-process
rlimit would let each have the whole limit). Pages of a tmpfs are charged to
the cgroup of the process that writes them, so the jail's /tmp, home and
/dev/shm count within the same memory limit.

Why a pids cgroup: the kernel does not count RLIMIT_NPROC for processes whose
real user is root outside their user namespace, and a worker running as root
maps the jail's user to root.

Both cgroup versions are supported: v2's unified tree (`memory.max`,
`memory.swap.max`, `memory.oom.group`, `memory.events`) and v1's
per-controller trees (`memory.limit_in_bytes`, `memory.memsw.limit_in_bytes`
where swap is accounted, `memory.oom_control`). Where no cgroup can be made
(no controller, or no right to write it), the rlimits of `limits.Limits`
remain the only limits, as docs/jail.md says.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
import uuid
from pathlib import Path

CGROUP_FS = Path("/sys/fs/cgroup")
# Where cgroup v2's unified tree may be mounted (alone, or beside v1's).
V2_ROOTS = (CGROUP_FS, CGROUP_FS / "unified")
# A busy cgroup is retried for a minute (0.2 s apart) before it is left.
LATE_REMOVAL_TRIES = 300


class CommandCgroup:
    """The pids and memory cgroups of one command, as far as this process may
    create them. `pids` and `memory` are the folders holding each limit, None
    where that limit could not be set by a cgroup."""

    def __init__(self, max_processes: int | None, memory_bytes: int | None) -> None:
        self.folders: list[Path] = []
        self.pids: Path | None = None
        self.memory: Path | None = None
        self.memory_version = 0
        name = f"codex-jail-{uuid.uuid4().hex[:12]}"
        wanted = {"pids": max_processes, "memory": memory_bytes}
        by_parent: dict[Path, list[str]] = {}
        versions: dict[Path, int] = {}
        for controller, value in wanted.items():
            found = _parent_for(controller) if value else None
            if found is not None:
                parent, version = found
                by_parent.setdefault(parent, []).append(controller)
                versions[parent] = version
        for parent, controllers in by_parent.items():
            folder = parent / name
            try:
                folder.mkdir()
            except OSError:
                continue
            self.folders.append(folder)
            version = versions[parent]
            if "pids" in controllers and _write(folder / "pids.max", max_processes):
                self.pids = folder
            if "memory" in controllers and _set_memory(folder, version, memory_bytes):
                self.memory = folder
                self.memory_version = version

    @classmethod
    def none(cls) -> CommandCgroup:
        """No cgroup at all (a container backend's limits are the engine's)."""
        return cls(None, None)

    def procs_files(self) -> list[str]:
        """The files a child writes its pid to, to join every cgroup."""
        return [str(folder / "cgroup.procs") for folder in self.folders]

    def members(self) -> list[int]:
        """The command's processes (host pids), as its cgroup lists them."""
        for folder in self.folders:
            with contextlib.suppress(OSError, ValueError):
                listed = (folder / "cgroup.procs").read_text()
                return [int(pid) for pid in listed.split()]
        return []

    def oom_kills(self) -> int:
        """How many of the command's processes the kernel killed for going
        over its memory limit."""
        if self.memory is None:
            return 0
        name = "memory.events" if self.memory_version == 2 else "memory.oom_control"
        with contextlib.suppress(OSError, ValueError):
            for line in (self.memory / name).read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill":
                    return int(value)
        return 0

    def kill_all(self) -> None:
        """SIGKILL every process still in the cgroups."""
        for folder in self.folders:
            kill = folder / "cgroup.kill"
            if kill.exists() and _write(kill, 1):
                continue
            with contextlib.suppress(OSError):
                for line in (folder / "cgroup.procs").read_text().split():
                    with contextlib.suppress(ProcessLookupError, ValueError):
                        os.kill(int(line), signal.SIGKILL)

    def remove(self) -> None:
        """Remove the cgroups (they must be empty: killed processes leave as
        the kernel reaps them, so a few tries may be needed). One still busy
        after half a second (a namespace freeing a full tmpfs) is removed by
        a thread of its own, so that no empty cgroup is left behind."""
        left = [folder for folder in self.folders if not self._rmdir(folder, 50)]
        if left:
            threading.Thread(
                target=self._remove_later, args=(left,), daemon=True
            ).start()

    def _rmdir(self, folder: Path, tries: int, pause: float = 0.01) -> bool:
        for _ in range(tries):
            try:
                folder.rmdir()
                return True
            except FileNotFoundError:
                return True
            except OSError:
                self.kill_all()
                time.sleep(pause)
        return False

    def _remove_later(self, folders: list[Path]) -> None:
        for folder in folders:
            self._rmdir(folder, LATE_REMOVAL_TRIES, pause=0.2)


def _set_memory(folder: Path, version: int, limit: int | None) -> bool:
    """Set the memory limit, and no swap beyond it; False when it cannot be."""
    if version == 2:
        if not _write(folder / "memory.max", limit):
            return False
        # No swap: the limit is the memory a command may take from the host.
        if (folder / "memory.swap.max").exists() and not _write(
            folder / "memory.swap.max", 0
        ):
            return False
        # The whole command goes at once, as a v1 command does by the supervisor.
        if (folder / "memory.oom.group").exists():
            _write(folder / "memory.oom.group", 1)
        return True
    if not _write(folder / "memory.limit_in_bytes", limit):
        return False
    # Present only where the kernel accounts swap; memory plus swap = the limit.
    swap = folder / "memory.memsw.limit_in_bytes"
    return not swap.exists() or _write(swap, limit)


def _write(path: Path, value: object) -> bool:
    try:
        path.write_text(str(int(value)))  # type: ignore[call-overload]
    except (OSError, TypeError, ValueError):
        return False
    return True


_PARENTS: dict[str, tuple[Path, int] | None] = {}


def _parent_for(controller: str) -> tuple[Path, int] | None:
    """The cgroup folder new cgroups with `controller` go under, and its
    version; found once per process."""
    if controller not in _PARENTS:
        _PARENTS[controller] = _find_parent(controller)
    return _PARENTS[controller]


def _find_parent(controller: str) -> tuple[Path, int] | None:
    candidates: list[tuple[Path, int]] = []
    # v2: under the root of the unified tree, where the controller is handed
    # down (a cgroup holding processes may not hand controllers down).
    for root in V2_ROOTS:
        with contextlib.suppress(OSError):
            if controller in (root / "cgroup.subtree_control").read_text().split():
                candidates.append((root, 2))
    # v1: under this process's own cgroup of that controller, so a limit an
    # operator put on the worker holds for its commands too; else the root.
    v1_root = CGROUP_FS / controller
    own = _own_v1_cgroup(controller)
    if own:
        candidates.append((v1_root / own.lstrip("/"), 1))
    candidates.append((v1_root, 1))
    for folder, version in candidates:
        if (folder / "cgroup.procs").exists() and os.access(folder, os.W_OK):
            return folder, version
    return None


def _own_v1_cgroup(controller: str) -> str:
    """This process's cgroup in the v1 tree of `controller` ("" if none)."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _number, controllers, path = line.split(":", 2)
            if controller in controllers.split(","):
                return path
    return ""


def forget_parents() -> None:
    """Look for the cgroup parents again (tests; a changed machine)."""
    _PARENTS.clear()


__all__ = ["CommandCgroup", "forget_parents"]
