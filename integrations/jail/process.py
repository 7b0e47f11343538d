"""Supervising one jailed command: output kept with a cap, killed on time,
on running out of memory, or on filling its worktree.

The command runs in a session and process group of its own, under the limits
of `limits.Limits`, in cgroups of its own (`cgroups.CommandCgroup`). The call
returns at its wall-clock limit whatever the command's descendants do: the
group and the command's cgroups are killed, the backend's namespace dies with
its first process, and the reader of the output is given a bounded time to
drain even while some descendant still holds the pipe open. A command the
kernel killed a process of for its memory limit is stopped whole and says
so; one that writes its worktree past its quota is stopped within a poll
(`quota.QuotaWatch`) and told what fills it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from integrations.jail.cgroups import CommandCgroup
from integrations.jail.limits import MEGABYTE, Limits, apply_rlimits
from integrations.jail.quota import QuotaWatch

# A runaway command is killed once it has printed this much, well before its
# timeout, so it cannot fill memory while the reader discards what it prints.
KILL_AFTER_OUTPUT_BYTES = 20_000_000

# How long the reader may drain the pipe after the command ended or was killed.
DRAIN_SECONDS = 1.0
# How often the supervisor looks whether the kernel killed a process of the
# command for its memory limit (then the whole command is stopped).
OOM_POLL_SECONDS = 0.1

SIGNAL_NOTES = {
    signal.SIGXCPU: "the CPU time limit was reached",
    signal.SIGXFSZ: "the file size limit was reached",
    signal.SIGKILL: "killed",
}


@dataclass
class CommandResult:
    """How a command ended and what it printed (capped, head and tail).

    `limit` names the limit that ended it, or that it went over: "time",
    "output", "memory" or "disk"; "" when none did. `note` says it in words
    (also at the end of `output`)."""

    exit_code: int | None
    output: str
    total_bytes: int
    timed_out: bool
    note: str = ""
    limit: str = ""

    @property
    def ok(self) -> bool:
        return not self.timed_out and self.exit_code == 0 and not self.limit


class _Capture:
    """The first and the last part of a stream, within `cap` characters."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        # utf-8: at most 4 bytes a character; half for the head, half the tail.
        self.half = max(1, cap * 2)
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.half - len(self.head)
        if room > 0:
            self.head.extend(chunk[:room])
            chunk = chunk[room:]
        if chunk:
            self.tail.extend(chunk)
            if len(self.tail) > self.half:
                del self.tail[: len(self.tail) - self.half]

    def text(self) -> str:
        """The output, or its first and last part around a marker saying
        how much there was (a test run's summary is printed last)."""
        head = self.head.decode("utf-8", errors="replace")
        whole = self.total <= len(self.head)
        if whole and len(head) <= self.cap:
            return head
        keep = max(1, self.cap // 2)
        tail = head if whole else self.tail.decode("utf-8", errors="replace")
        return (
            f"{head[:keep]}\n[... output cut: {self.total} bytes in all; the "
            f"first and the last {keep} characters are shown ...]\n{tail[-keep:]}"
        )


def supervise(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: str | os.PathLike[str],
    limits: Limits,
    cgroup: bool = True,
    on_kill: Callable[[], None] | None = None,
    on_output: Callable[[bytes], None] | None = None,
    watch: Sequence[Path] | Mapping[Path, str] = (),
) -> CommandResult:
    """Run `argv` under `limits` and return how it ended.

    `cgroup`: whether the command gets cgroups of its own (not for a
    container CLI, whose engine applies the limits). `on_kill` is called,
    besides killing the process group and the cgroups, when the command is
    stopped early (a container backend stops its container there).
    `on_output` is given each chunk of output as it is read (a live log);
    what it raises is ignored. `watch`: the folders held to
    `limits.worktree_quota_mb` (the worktree first).
    """
    process: subprocess.Popen[bytes] | None = None

    def stop() -> None:
        if process is not None:
            _kill_group(process)
        group.kill_all()
        if on_kill is not None:
            on_kill()

    if cgroup:
        group = CommandCgroup(limits.max_processes, limits.memory_mb * MEGABYTE)
    else:
        group = CommandCgroup.none()
    rlimits = limits.rlimits(
        memory_cgroup=group.memory is not None, pids_cgroup=group.pids is not None
    )
    procs_files = group.procs_files()

    def prepare_child() -> None:  # runs in the child, between fork and exec
        for procs_file in procs_files:
            fd = os.open(procs_file, os.O_WRONLY)
            try:
                os.write(fd, str(os.getpid()).encode())
            finally:
                os.close(fd)
        apply_rlimits(rlimits)

    capture = _Capture(limits.output_chars)
    runaway = threading.Event()
    try:
        # Measured before the command starts: what it writes cannot raise
        # its room.
        quota = QuotaWatch(watch, limits.worktree_quota_mb, stop, group.members)
        process = subprocess.Popen(
            list(argv),
            cwd=os.fspath(cwd),
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            close_fds=True,
            preexec_fn=prepare_child,  # noqa: PLW1509 - only setrlimit and a write
        )
    except BaseException:
        group.remove()
        raise
    quota.start()

    def read() -> None:
        assert process.stdout is not None
        with contextlib.suppress(ValueError, OSError):
            while chunk := process.stdout.read1(65536):
                capture.add(chunk)
                if on_output is not None:
                    with contextlib.suppress(Exception):
                        on_output(chunk)
                if capture.total > KILL_AFTER_OUTPUT_BYTES:
                    runaway.set()
                    stop()
                    break

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    timed_out = _wait(process, limits.wall_seconds, group, stop)
    # Descendants may outlive the first process (a double fork, setsid) and
    # hold the pipe: the group and the cgroups go, then a bounded drain.
    _kill_group(process)
    group.kill_all()
    reader.join(timeout=DRAIN_SECONDS)
    with contextlib.suppress(OSError):
        process.stdout.close()
    over_quota = quota.finish()
    out_of_memory = group.oom_kills() > 0
    group.remove()
    notes, limit = [], ""
    if runaway.is_set():
        notes.append(f"killed: printed more than {KILL_AFTER_OUTPUT_BYTES} bytes")
        limit = "output"
    elif timed_out:
        notes.append(f"timed out after {limits.wall_seconds:g}s and was killed")
        limit = "time"
    if out_of_memory:
        notes.append(
            "killed: out of memory: the command went over its memory limit of "
            f"{limits.memory_mb} MB (its processes and the files in its /tmp, "
            "home and /dev/shm count together)"
        )
        limit = limit or "memory"
    if over_quota:
        notes.append(over_quota)
        limit = limit or "disk"
    if not notes and process.returncode is not None and process.returncode < 0:
        notes.append(
            SIGNAL_NOTES.get(
                -process.returncode, f"killed by signal {-process.returncode}"
            )
        )
    note = "\n".join(notes)
    text = capture.text()
    if note:
        text = f"{text}\n[{note}]" if text else f"[{note}]"
    return CommandResult(
        exit_code=None if timed_out else process.returncode,
        output=text,
        total_bytes=capture.total,
        timed_out=timed_out,
        note=note,
        limit=limit,
    )


def _wait(
    process: subprocess.Popen[bytes],
    seconds: float,
    group: CommandCgroup,
    stop: Callable[[], None],
) -> bool:
    """Wait for the command's first process; True when it timed out. A
    process of the command killed for the memory limit stops the command
    whole (cgroup v2 does that itself with memory.oom.group; v1 does not)."""
    deadline = time.monotonic() + seconds
    watch_memory = group.memory is not None
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            stop()
            process.wait()
            return True
        try:
            process.wait(timeout=min(left, OOM_POLL_SECONDS) if watch_memory else left)
            return False
        except subprocess.TimeoutExpired:
            if watch_memory and group.oom_kills() > 0:
                stop()
                process.wait()
                return False


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    # The group may be gone already (it exited, or was killed a moment ago).
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
