"""Forked processes that read a django-q2 queue as its workers and monitor
do, writing each item to a pipe, for the queue-lock tests."""

from __future__ import annotations

import os
import time
from typing import Any


def start_reader(queue: Any, done_write: int) -> int:
    """A process that takes items like a django-q2 worker (or the monitor)
    and writes each, a line, to `done_write`; returns its pid."""
    pid = os.fork()
    if pid == 0:
        for item in iter(queue.get, "STOP"):
            os.write(done_write, f"{item}\n".encode())
        os._exit(0)
    return pid


def wait_until(predicate, timeout: float = 5.0):
    """`predicate()` once it is truthy, polling; None after `timeout` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = predicate()
        if found:
            return found
        time.sleep(0.02)
    return None


def items_done(done_read: int) -> str:
    """What the readers wrote so far (`done_read` is non-blocking)."""
    try:
        return os.read(done_read, 1024).decode()
    except BlockingIOError:
        return ""
