"""Supervising one jailed command: output kept with a cap, killed on time.

The command runs in a session and process group of its own, under the limits
of `limits.Limits`. The call returns at its wall-clock limit whatever the
command's descendants do: the group and the command's cgroup are killed, the
backend's namespace dies with its first process, and the reader of the output
is given a bounded time to drain even while some descendant still holds the
pipe open.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from integrations.jail.limits import Limits, PidsCgroup, apply_rlimits

# A runaway command is killed once it has printed this much, well before its
# timeout, so it cannot fill memory while the reader discards what it prints.
KILL_AFTER_OUTPUT_BYTES = 20_000_000

# How long the reader may drain the pipe after the command ended or was killed.
DRAIN_SECONDS = 1.0

SIGNAL_NOTES = {
    signal.SIGXCPU: "the CPU time limit was reached",
    signal.SIGXFSZ: "the file size limit was reached",
    signal.SIGKILL: "killed",
}


@dataclass
class CommandResult:
    """How a command ended and what it printed (capped, head and tail)."""

    exit_code: int | None
    output: str
    total_bytes: int
    timed_out: bool
    note: str = ""

    @property
    def ok(self) -> bool:
        return not self.timed_out and self.exit_code == 0


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
) -> CommandResult:
    """Run `argv` under `limits` and return how it ended.

    `on_kill` is called, besides killing the process group and the cgroup,
    when the command is stopped early (a container backend stops its
    container there). `on_output` is given each chunk of output as it is
    read (a live log); what it raises is ignored.
    """
    group = PidsCgroup(limits.max_processes if cgroup else None)
    rlimits = limits.rlimits()
    procs_file = group.procs_file()

    def prepare_child() -> None:  # runs in the child, between fork and exec
        if procs_file:
            fd = os.open(procs_file, os.O_WRONLY)
            try:
                os.write(fd, str(os.getpid()).encode())
            finally:
                os.close(fd)
        apply_rlimits(rlimits)

    capture = _Capture(limits.output_chars)
    runaway = threading.Event()
    try:
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

    def stop() -> None:
        _kill_group(process)
        group.kill_all()
        if on_kill is not None:
            on_kill()

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
    timed_out = False
    try:
        process.wait(timeout=limits.wall_seconds)
    except subprocess.TimeoutExpired:
        timed_out = True
        stop()
        process.wait()
    # Descendants may outlive the first process (a double fork, setsid) and
    # hold the pipe: the group and the cgroup go, then a bounded drain.
    _kill_group(process)
    group.kill_all()
    reader.join(timeout=DRAIN_SECONDS)
    with contextlib.suppress(OSError):
        process.stdout.close()
    group.remove()
    text = capture.text()
    note = ""
    if runaway.is_set():
        note = f"killed: printed more than {KILL_AFTER_OUTPUT_BYTES} bytes"
    elif timed_out:
        note = f"timed out after {limits.wall_seconds:g}s and was killed"
    elif process.returncode is not None and process.returncode < 0:
        note = SIGNAL_NOTES.get(
            -process.returncode, f"killed by signal {-process.returncode}"
        )
    if note:
        text = f"{text}\n[{note}]" if text else f"[{note}]"
    return CommandResult(
        exit_code=None if timed_out else process.returncode,
        output=text,
        total_bytes=capture.total,
        timed_out=timed_out,
        note=note,
    )


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    # The group may be gone already (it exited, or was killed a moment ago).
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
