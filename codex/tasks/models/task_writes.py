"""What a task writes with its next save: events, job rows and callbacks,
and the lease events; mixed into Task."""

from __future__ import annotations

from typing import Any

from django.db import DEFAULT_DB_ALIAS

from codex.core.workers import enqueue_on_commit, job_row
from codex.events.models import Event, EventKind


class TaskWrites:
    """Rows queued on a task and written in the same transaction as its next
    save (Task.save passes them to save_with_rows)."""

    def record(self, kind: str, *, by: str, reason: str = "", **fields: Any) -> None:
        """Queue an event; it is written in the same transaction as the next save."""
        if not hasattr(self, "_pending_events"):
            self._pending_events = []
        self._pending_events.append(
            Event(task=self, kind=kind, actor=by, reason=reason, **fields)
        )

    def enqueue_with_save(self, func_path: str, *args: Any) -> None:
        """Enqueue `func_path(*args)` as part of the next save: with the ORM
        broker on this database its job row is written by the save itself (one
        more INSERT in the same statement or transaction, see save_with_rows),
        so it exists if and only if the save commits; with Redis, or jobs run
        inline, it is sent once the save's transaction commits."""
        row = job_row(func_path, *args, using=self._state.db or DEFAULT_DB_ALIAS)
        if row is None:
            self.on_save(lambda: enqueue_on_commit(func_path, *args))
            return
        self.__dict__.setdefault("_jobs_with_save", []).append(row)

    def on_save(self, callback) -> None:
        """Run `callback` inside the next save's transaction, after the update."""
        if not hasattr(self, "_after_save"):
            self._after_save = []
        self._after_save.append(callback)

    def on_lease_taken_over(self, previous_holder: str | None, holder: str) -> None:
        Event.objects.create(
            task=self,
            kind=EventKind.LEASE,
            actor=holder,
            reason=f"took over the expired lease of {previous_holder}",
            data={"previous_holder": previous_holder},
        )

    def on_lease_broken(
        self, previous_holder: str | None, *, by: str, reason: str
    ) -> None:
        Event.objects.create(
            task=self,
            kind=EventKind.LEASE,
            actor=by,
            reason=reason or "lease force-broken",
            data={"action": "force_break", "previous_holder": previous_holder},
        )
