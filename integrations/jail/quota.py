"""The disk quota of a worktree: checked while a command runs, after it ends
and after every write of the agent's file tools.

The worktree is a folder of the worker's own disk, bound into the jail, so
no mount of the jail can cap it. Instead a watcher stops the command as soon
as the worktree holds more than its quota: it polls the filesystem's free
space (one `statvfs`, a few microseconds) and walks the worktree only when
the filesystem grew by more than the worktree's room, and at least every few
seconds (another task's deletions could hide growth). A command is therefore
stopped within a poll or two of crossing the quota, not when it ends.

What is counted is what the disk holds: allocated blocks, each entry at
least one block (an empty file still costs an inode and its entry), hard
links once, nothing outside the worktree's own filesystem. The walk opens
each folder relative to the worktree and checks it is the folder it saw, so
a folder swapped for a symlink by the command is never followed out.

A worktree already over its quota when a command starts (a repository
bigger than its quota) may not grow further during it; the file tools, whose
writes are small, are held to the quota itself. The size a command starts
from is the one measured after the last command or write in this process
(measured anew when there is none), so a command costs one walk, at its end.
"""

from __future__ import annotations

import contextlib
import errno
import heapq
import os
import stat
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

MEGABYTE = 1024 * 1024
BLOCK = 4096
# How often the watcher polls the filesystem's free space: a statvfs costs
# microseconds, and at page-cache speed a command writes ~50 MB in this time.
POLL_SECONDS = 0.025
# The longest a watcher goes without a walk (a floor: long walks wait longer,
# so that walking a big worktree takes at most this share of a core).
WALK_EVERY_SECONDS = 5.0
BACKGROUND_WALK_SHARE = 0.05
# Once the filesystem grew by more than the worktree's room, walks may take
# a bigger share: the command may be filling the worktree right now.
GROWTH_WALK_SHARE = 0.25
# What a worktree with a path too long to open counts as: over any quota.
UNMEASURABLE = 2**62
# What the agent is shown: the biggest entries, listed within a time limit,
# names cut to a length.
REPORT_ENTRIES = 8
REPORT_SECONDS = 5.0
NAME_CHARS = 160

# Folders to measure: paths, or paths with the label their files are shown
# under (the worktree's is "", a QA check's output folder "/codex/out").
Roots = Sequence[Path] | Mapping[Path, str]

_OPEN_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC

# A worktree's quota by the Django app that knows its repository (the jail
# knows no models): codex.repositories registers it when it is ready.
_lookup: list[Callable[[Path], int | None]] = []
# The worktree's size after its last check, per worktree, in this process.
_last_usage: dict[Path, int] = {}
_LAST_USAGE_KEPT = 256


def register_quota_lookup(lookup: Callable[[Path], int | None]) -> None:
    """Have `lookup(worktree)` give a worktree's quota in MB (None: unknown)."""
    _lookup[:] = [lookup]


def quota_mb_for(worktree: Path, default: int) -> int:
    """The quota of `worktree` in MB: its repository's, else `default`."""
    for lookup in _lookup:
        quota = lookup(Path(worktree))
        if quota:
            return int(quota)
    return default


class _Walk:
    """One walk of some folders: the bytes they hold, stopping once over
    `stop_above`; with `report`, what holds the most too."""

    def __init__(self, stop_above: int | None = None, report: bool = False) -> None:
        self.total = 0
        self.stop_above = stop_above
        self.report = report
        self.deadline = time.monotonic() + REPORT_SECONDS if report else None
        self.cut_short = False
        # A folder whose path is too long to open: it cannot be measured, so
        # the worktree counts as over any quota (no repository needs one).
        self.too_deep = ""
        self.seen: set[tuple[int, int]] = set()
        self.files: list[tuple[int, str]] = []
        # Per folder (its shown path): bytes, files, and its biggest entry.
        self.folders: dict[str, list[int]] = {}
        self.parents: dict[str, str] = {}

    def over(self) -> bool:
        if self.too_deep:
            return True
        return self.stop_above is not None and self.total > self.stop_above

    @property
    def measured(self) -> int:
        """The bytes found; more than any quota when a folder was too deep."""
        return UNMEASURABLE if self.too_deep else self.total

    def run(self, roots: Roots) -> _Walk:
        for root, label in _labelled(roots).items():
            self._walk(root, label)
            if self.over() or self.cut_short:
                break
        return self

    def _walk(self, root: Path, label: str) -> None:
        try:
            top = os.open(root, _OPEN_DIR)
        except OSError:
            return
        try:
            device = os.fstat(top).st_dev
            pending = [("", os.fstat(top).st_ino)]
            while pending:
                if self.over():
                    return
                if self.deadline is not None and time.monotonic() > self.deadline:
                    self.cut_short = True
                    return
                relative, inode = pending.pop()
                for name, info in self._entries(top, relative, device, inode):
                    child = f"{relative}/{name}" if relative else name
                    is_folder = stat.S_ISDIR(info.st_mode)
                    # Nothing on another filesystem (du -x): not the worktree's.
                    if is_folder and info.st_dev == device:
                        pending.append((child, info.st_ino))
                    self._count(info, label, child, is_folder)
        finally:
            os.close(top)

    def _entries(
        self, top: int, relative: str, device: int, inode: int
    ) -> list[tuple[str, os.stat_result]]:
        try:
            fd = os.open(relative or ".", _OPEN_DIR, dir_fd=top)
        except OSError as error:
            if error.errno == errno.ENAMETOOLONG:
                self.too_deep = relative
            return []
        try:
            # Opened by a path the command may have changed since it was
            # seen: only the folder that was seen is read.
            here = os.fstat(fd)
            if (here.st_dev, here.st_ino) != (device, inode):
                return []
            found = []
            with os.scandir(fd) as entries:
                for entry in entries:
                    with contextlib.suppress(OSError):
                        found.append((entry.name, entry.stat(follow_symlinks=False)))
            return found
        except OSError:
            return []
        finally:
            os.close(fd)

    def _count(
        self, info: os.stat_result, label: str, child: str, is_folder: bool
    ) -> None:
        if info.st_nlink > 1 and not is_folder:
            key = (info.st_dev, info.st_ino)
            if key in self.seen:
                return
            self.seen.add(key)
        size = max(info.st_blocks * 512, BLOCK)
        self.total += size
        if not self.report:
            return
        parts = child.split("/")
        # The folders holding it, from the root down to its own.
        folders = [_shown(label, parts[:depth]) for depth in range(len(parts))]
        for depth, folder in enumerate(folders):
            held = self.folders.setdefault(folder, [0, 0, 0])
            held[0] += size
            held[1] += 0 if is_folder else 1
            if depth:
                self.parents[folder] = folders[depth - 1]
        if not is_folder:
            own = self.folders[folders[-1]]
            own[2] = max(own[2], size)
            heapq.heappush(self.files, (size, _shown(label, parts).rstrip("/")))
            if len(self.files) > REPORT_ENTRIES:
                heapq.heappop(self.files)

    def biggest(self) -> list[str]:
        """The biggest files and folders, biggest first, each a line. A folder
        most of which one entry of it holds is left out (that entry says it)."""
        for folder, parent in self.parents.items():
            held = self.folders[parent]
            held[2] = max(held[2], self.folders[folder][0])
        entries = [(size, name, "") for size, name in self.files]
        for folder, (size, files, biggest) in self.folders.items():
            if biggest < size * 0.9:
                entries.append((size, folder, f" ({files} files)"))
        return [
            f"  {_size(size):>9}  {_printable(name)}{count}"
            for size, name, count in heapq.nlargest(REPORT_ENTRIES, entries)
        ]


def _shown(label: str, parts: list[str]) -> str:
    """A folder as the agent sees it: "./", "src/app/", "/codex/out/x/"."""
    inside = "".join(f"{part}/" for part in parts)
    if label:
        return f"{label.rstrip('/')}/{inside}"
    return inside or "./"


def disk_usage(roots: Roots, stop_above: int | None = None) -> int:
    """The bytes `roots` hold on disk; once over `stop_above`, the walk stops
    and the total so far (already over it) is returned."""
    return _Walk(stop_above).run(roots).measured


def over_quota_message(roots: Roots, deleted: int = 0) -> tuple[int, str]:
    """The bytes `roots` hold, and what the agent is told: how full, and the
    biggest files and folders (paths as the jail shows them,
    relative to the worktree). `deleted`: bytes the command held in files it
    had deleted but still wrote (gone with it, so not in the listing)."""
    walk = _Walk(report=True).run(roots)
    lines = walk.biggest()
    held = _size(walk.total)
    if walk.too_deep:
        held = (
            "a folder nested too deep to measure (a path longer than the "
            f"system allows): {_printable(walk.too_deep)}"
        )
    elif walk.cut_short:
        lines.append("  (the listing was cut short: too many files to list in time)")
        held = f"more than {held}"
    if deleted:
        held += (
            f", and the command held {_size(deleted)} more in files it had "
            "deleted while still writing them (gone with the command)"
        )
    listing = "".join(f"{line}\n" for line in lines)
    if listing:
        listing = f"What fills it:\n{listing}"
    return walk.measured, (
        f"the worktree holds {held}.\n{listing}"
        "Delete what is not needed (build output, downloads, generated data); "
        "the quota is set per repository."
    )


def check_after_write(worktree: Path, quota_mb: int) -> str:
    """After a file tool's write: "" within the quota, else the message."""
    usage = disk_usage([worktree], stop_above=quota_mb * MEGABYTE)
    if usage <= quota_mb * MEGABYTE:
        _remember(worktree, usage)
        return ""
    usage, message = over_quota_message([worktree])
    _remember(worktree, usage)
    return (
        f"the write was made, but the worktree is over its disk quota of "
        f"{quota_mb} MB: {message}"
    )


class QuotaWatch:
    """Watches `roots` (a worktree, and a QA check's output folder) while one
    command runs; calls `stop` from its thread once they hold more than the
    quota (or, when they already did at the start, more than they did).

    `processes` gives the command's processes (its cgroup's, where it has
    one): files they deleted but still hold open take disk no walk can see,
    so what they hold on the watched filesystems is counted too."""

    def __init__(
        self,
        roots: Roots,
        quota_mb: int,
        stop: Callable[[], None],
        processes: Callable[[], Iterable[int]] = tuple,
    ) -> None:
        """`roots`: the folders watched (the worktree first), each with the
        label its files are shown under ("" for the worktree)."""
        self.roots = _labelled(roots)
        self.paths = list(self.roots)
        self.quota = int(quota_mb) * MEGABYTE
        self.quota_mb = int(quota_mb)
        self.stop = stop
        self.processes = processes
        self.stopped_it = False
        self.deleted = 0
        self._done = threading.Event()
        self._thread: threading.Thread | None = None
        self.usage = 0
        start = 0
        for number, path in enumerate(self.paths):
            known = _last_usage.get(path) if number == 0 else None
            start += known if known is not None else disk_usage([path])
        self.start_usage = start
        self.ceiling = max(self.quota, start)
        self._devices = _devices(self.paths)
        self._used_at_start = _filesystem_used(self.paths)
        self._started = time.monotonic()

    def start(self) -> None:
        """Watch the command (just started), in a thread of its own."""
        if not self.paths:
            return
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        last_usage = self.start_usage
        last_used = self._used_at_start
        last_walk = self._started
        walk_seconds = 0.0
        while not self._done.wait(POLL_SECONDS):
            now = time.monotonic()
            grown = _filesystem_used(self.paths) - last_used
            since = now - last_walk
            due = since > max(WALK_EVERY_SECONDS, walk_seconds / BACKGROUND_WALK_SHARE)
            rested = since > walk_seconds / GROWTH_WALK_SHARE
            if not (due or (rested and grown > self.ceiling - last_usage)):
                continue
            used_before = _filesystem_used(self.paths)
            began = time.monotonic()
            deleted = _deleted_but_open(self.processes(), self._devices)
            last_usage = deleted + disk_usage(
                self.roots, stop_above=max(0, self.ceiling - deleted)
            )
            last_walk = time.monotonic()
            walk_seconds = last_walk - began
            last_used = used_before
            if last_usage > self.ceiling:
                self.stopped_it = True
                self.deleted = deleted
                self.stop()
                return

    def finish(self) -> str:
        """Stop watching and check once more (the command has ended): "" when
        within the quota, else what the agent is told."""
        self._done.set()
        if self._thread is not None:
            self._thread.join()
        if not self.paths:
            return ""
        self.usage = disk_usage(self.paths, stop_above=self.ceiling)
        if self.usage <= self.ceiling and not self.stopped_it:
            if len(self.paths) == 1:
                _remember(self.paths[0], self.usage)
            return ""
        self.usage, message = over_quota_message(self.roots, self.deleted)
        _remember(self.paths[0], disk_usage(self.paths[:1]))
        grew = ""
        if self.ceiling > self.quota:
            grew = f" (and more than the {_size(self.ceiling)} it held at the start)"
        verb = "stopped: the command wrote" if self.stopped_it else "the command wrote"
        return (
            f"{verb} past the worktree's disk quota of {self.quota_mb} MB{grew}: "
            f"{message}"
        )


def _deleted_but_open(processes: Iterable[int], devices: set[int]) -> int:
    """Bytes on `devices` in files the processes hold open (or mapped) that
    no folder names any more."""
    seen: set[tuple[int, int]] = set()
    total = 0
    for pid in processes:
        for kind in ("fd", "map_files"):
            folder = f"/proc/{int(pid)}/{kind}"
            try:
                names = os.listdir(folder)
            except OSError:
                continue
            for name in names:
                try:
                    info = os.stat(f"{folder}/{name}")
                except OSError:
                    continue
                key = (info.st_dev, info.st_ino)
                if (
                    stat.S_ISREG(info.st_mode)
                    and info.st_nlink == 0
                    and info.st_dev in devices
                    and key not in seen
                ):
                    seen.add(key)
                    total += info.st_blocks * 512
    return total


def _devices(roots: Sequence[Path]) -> set[int]:
    devices = set()
    for root in roots:
        with contextlib.suppress(OSError):
            devices.add(os.stat(root).st_dev)
    return devices


def _labelled(roots: Roots) -> dict[Path, str]:
    if isinstance(roots, Mapping):
        return {Path(path): label for path, label in roots.items()}
    return {Path(path): "" for path in roots}


def _filesystem_used(roots: Sequence[Path]) -> int:
    """Bytes in use on the filesystems holding `roots` (each counted once)."""
    used, devices = 0, set()
    for root in roots:
        with contextlib.suppress(OSError):
            device = os.stat(root).st_dev
            if device in devices:
                continue
            devices.add(device)
            fs = os.statvfs(root)
            used += (fs.f_blocks - fs.f_bfree) * fs.f_frsize
    return used


def _remember(worktree: Path, usage: int) -> None:
    _last_usage.pop(worktree, None)
    _last_usage[worktree] = usage
    while len(_last_usage) > _LAST_USAGE_KEPT:
        _last_usage.pop(next(iter(_last_usage)))


def _size(size: int) -> str:
    for unit, scale in (("GB", 1024**3), ("MB", MEGABYTE), ("KB", 1024)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size} B"


def _printable(name: str) -> str:
    """A file name as one safe line: control characters escaped, capped."""
    text = "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in name)
    return text if len(text) <= NAME_CHARS else text[: NAME_CHARS - 1] + "…"


__all__ = [
    "QuotaWatch",
    "check_after_write",
    "disk_usage",
    "quota_mb_for",
    "register_quota_lookup",
    "over_quota_message",
]
