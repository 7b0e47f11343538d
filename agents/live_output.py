"""A run's command output on its way to the task's live page
(docs/domain/fleet.md#live-output): the jail's reader thread hands each piece
to the stream as it comes; a thread of the stream's own keeps the tail and
writes it every FLUSH_SECONDS, so that the reader never waits on the
database, and closes its database connection when the run ends."""

from __future__ import annotations

import logging
import threading

from django.db import DatabaseError, connection
from django.utils import timezone

from codex.fleet.models import LiveOutput
from codex.fleet.models.live_output import TAIL_CHARS

logger = logging.getLogger(__name__)

FLUSH_SECONDS = 2.0


class OutputStream:
    """The live output of the commands of one run of `role` on a task."""

    def __init__(self, task_pk: int, role: str, flush_seconds: float = FLUSH_SECONDS):
        self.task_pk = task_pk
        self.role = role
        self.flush_seconds = flush_seconds
        self._lock = threading.Lock()
        self._tail = ""
        self._dirty = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __call__(self, chunk: str) -> None:
        """One piece of a command's output (the jail's reader thread)."""
        with self._lock:
            self._tail = (self._tail + chunk)[-TAIL_CHARS:]
            self._dirty = True
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._write_until_closed,
                    name=f"live-output-{self.task_pk}",
                    daemon=True,
                )
                self._thread.start()

    def close(self) -> None:
        """Write what is left and end the writer (at the run's end)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def _write_until_closed(self) -> None:
        try:
            while not self._stop.wait(self.flush_seconds):
                self._write()
            self._write()
        finally:
            connection.close()  # this thread's own

    def _write(self) -> None:
        with self._lock:
            if not self._dirty:
                return
            text, self._dirty = self._tail, False
        try:
            LiveOutput.objects.update_or_create(
                task_id=self.task_pk,
                defaults={
                    "role": self.role,
                    "text": text,
                    "updated_at": timezone.now(),
                },
            )
        except DatabaseError:
            # A live view is a courtesy: the command and the run go on.
            logger.warning("live output of task %s not written", self.task_pk)
