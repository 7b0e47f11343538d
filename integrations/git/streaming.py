"""A read-only git command whose output is read as it comes.

`runner.git` keeps all of git's output in memory, which suits commands that
print little. A search (`git grep`) may print a line for every line of the
repository, so its output is read here chunk by chunk and the caller keeps
what it needs. It runs as `runner` runs git (the same pinned settings, the
same minimal environment, its own process group) and is killed at its
deadline or as soon as the caller stops reading.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from types import TracebackType

from integrations.git.runner import HARDENED, git_environment, scrub

# The most of git's stderr kept (why it failed).
STDERR_BYTES = 4000
READ_BYTES = 64 * 1024


class GitStream:
    """`git <args>` in `cwd`, its output read through `chunks()`; after the
    `with` block, `returncode`, `stderr` and `timed_out` say how it ended
    (returncode None: stopped by the caller or its deadline)."""

    def __init__(
        self,
        args: Sequence[str],
        cwd: str | os.PathLike[str],
        *,
        timeout: float,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.args = [str(arg) for arg in args]
        self.cwd = cwd
        self.timeout = timeout
        self.env = env
        self.returncode: int | None = None
        self.stderr = ""
        self.timed_out = False
        self._process: subprocess.Popen[bytes] | None = None
        # git's stderr goes to a file: a pipe nobody reads could fill and stall it.
        self._errors = tempfile.TemporaryFile()  # noqa: SIM115 (closed in __exit__)
        self._timer: threading.Timer | None = None
        self._deadline = 0.0
        self._eof = False

    def __enter__(self) -> GitStream:
        """Start git; OSError when it cannot start (git missing, cwd gone)."""
        try:
            self._process = subprocess.Popen(
                ["git", *HARDENED, *self.args],
                cwd=os.fspath(self.cwd),
                env=git_environment(self.env),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=self._errors,
                start_new_session=True,
            )
        except BaseException:
            self._errors.close()
            raise
        self._deadline = time.monotonic() + self.timeout
        self._timer = threading.Timer(self.timeout, self._expire)
        self._timer.daemon = True
        self._timer.start()
        return self

    def chunks(self) -> Iterator[bytes]:
        """git's standard output, as it comes."""
        assert self._process is not None and self._process.stdout is not None
        with contextlib.suppress(ValueError, OSError):
            while chunk := self._process.stdout.read1(READ_BYTES):
                yield chunk
            self._eof = True

    def _expire(self) -> None:
        self.timed_out = True
        self._kill()

    def _kill(self) -> None:
        if self._process is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self._process.pid, signal.SIGKILL)

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        assert self._process is not None
        if self._eof and not self.timed_out:
            # All read: git is about to exit (or a descendant holds on).
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._process.wait(max(0.0, self._deadline - time.monotonic()))
        if self._timer is not None:
            self._timer.cancel()
        if self._process.poll() is None:
            # The caller stopped reading, or the deadline passed: git goes.
            self._kill()
        with contextlib.suppress(OSError):
            self._process.stdout.close()  # type: ignore[union-attr]
        self._process.wait()
        if self._eof and not self.timed_out and self._process.returncode >= 0:
            self.returncode = self._process.returncode
        self._errors.seek(0)
        raw = self._errors.read(STDERR_BYTES)
        self._errors.close()
        self.stderr = scrub(raw.decode("utf-8", errors="replace"))
