"""Side effects outside the database happen at most once, however often a step runs.

THE RULE every side effect follows (a pull request, a comment, a label, a merge,
a board move, a notification): it is *recorded before* and *looked up after*.

1. Before acting, a SideEffect row with a stable key (what, on what: e.g.
   "github:acme/web:pr:create:codex/FEAT-20260119-abc123") is committed, with
   the attempt counted. It is committed on its own, outside any transaction,
   so that a worker killed mid-action leaves the record behind.
2. If the record says done, the stored result is returned and nothing is done.
3. If an earlier attempt started but never finished (the worker died, the
   request timed out), the outside system is asked first (`lookup`): "is there
   already a pull request for this branch?". Found: recorded as done, returned.
4. Only then is the action performed, and its result stored as done.
5. A caller that finds the effect already made before it gets to
   `perform_once` (a re-run that sees the pull request merged) `settle`s the
   record, so no record of a made effect stays `started`.

Without a `lookup`, an unfinished earlier attempt is an unknown outcome, and
`perform_once` raises SideEffectUncertain rather than risk doing it twice.

    pr = perform_once(
        f"github:{repo}:pr:create:{branch}",
        lambda: forge.create_pull_request(branch, title),
        lookup=lambda: forge.find_pull_request(branch),
        task=task,
    )
"""

from __future__ import annotations

import fcntl
import hashlib
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import connection, models
from django.db.models import F
from django.utils import timezone

from codex.core.store.compiled_query import first_row
from codex.core.store.plain_updates import update_row


class SideEffectStatus(models.TextChoices):
    STARTED = "started", "Started"
    DONE = "done", "Done"


class SideEffect(models.Model):
    """The record of one side effect outside the database (see this module).

    `key` names what and on what, stably across retries; `attempts` counts the
    times it was started; `result` is what the outside system answered (ids, URLs)
    once done, whether by doing it or by finding that an earlier attempt had.
    """

    key = models.CharField(max_length=400, unique=True)
    kind = models.CharField(max_length=50)
    task = models.ForeignKey(
        "tasks.Task",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="side_effects",
    )
    status = models.CharField(
        max_length=10,
        choices=SideEffectStatus.choices,
        default=SideEffectStatus.STARTED,
    )
    attempts = models.PositiveIntegerField(default=0)
    result = models.JSONField(default=dict, blank=True)
    found_by_lookup = models.BooleanField(default=False)
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    done_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [
            models.Index(
                fields=["created_at"],
                condition=models.Q(status="started"),
                name="side_effect_unfinished",
            )
        ]

    def __str__(self) -> str:
        return f"{self.key} ({self.status})"


Result = dict[str, Any]


class SideEffectUncertain(Exception):
    """An earlier attempt started and did not finish, and there is no way to
    look up whether it took effect: a person must check."""

    code = "side_effect_uncertain"

    def __init__(self, key: str, attempts: int) -> None:
        self.key = key
        super().__init__(
            f"side effect {key!r} was started {attempts} time(s) without finishing "
            "and cannot be looked up; check it by hand before retrying"
        )


def perform_once(
    key: str,
    action: Callable[[], Result],
    *,
    lookup: Callable[[], Result | None] | None = None,
    task=None,
    kind: str = "",
) -> Result:
    """Perform `action` at most once for `key`; return its (stored) result.

    `action` and `lookup` return JSON-serialisable dicts (ids, URLs, numbers).
    Must be called outside a transaction (see the module docstring).
    """
    if connection.in_atomic_block:
        raise RuntimeError(
            "perform_once must run outside a transaction: its record has to be "
            "committed before the side effect happens"
        )
    with exclusive(key):
        return _perform_once(key, action, lookup=lookup, task=task, kind=kind)


@contextmanager
def exclusive(key: str) -> Iterator[None]:
    """One caller at a time for `key` (PostgreSQL: a session advisory lock).

    Callers under a task's lease never meet, but some effects are not made
    under one (the progress comment's job): two of them at once would both
    find no record done and nothing to look up yet, and both act. The lock
    is the session's, not a transaction's (the record must commit before the
    effect), and it goes with the session (or the process, for the file lock
    of the embedded database) of a worker that dies. Locks nest (the
    progress comment's job holds one while perform_once takes another)."""
    digest = hashlib.sha256(key.encode()).digest()
    if connection.vendor != "postgresql":
        # The embedded database lives on one machine: a file lock there.
        folder = Path(settings.VAR_DIR) / "locks"
        folder.mkdir(parents=True, exist_ok=True)
        # 256 stripes: a bounded set of files, rarely shared by two keys.
        stripe = folder / f"effect-{digest[:1].hex()}.lock"
        held = _stripes_held()
        if stripe in held:
            # A nested lock on a stripe this thread holds: another flock of
            # the same file would wait for ever on this thread's own.
            yield
            return
        with open(stripe, "a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            held.add(stripe)
            try:
                yield
            finally:
                held.discard(stripe)
        return
    lock = int.from_bytes(digest[:8], "big", signed=True)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_lock(%s)", [lock])
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_unlock(%s)", [lock])


_held = threading.local()


def _stripes_held() -> set[Path]:
    """The embedded database's lock files this thread holds."""
    if not hasattr(_held, "stripes"):
        _held.stripes = set()
    return _held.stripes


def _perform_once(
    key: str,
    action: Callable[[], Result],
    *,
    lookup: Callable[[], Result | None] | None,
    task,
    kind: str,
) -> Result:
    # Compiled once: every step makes side effects (key is unique).
    record = first_row(
        SideEffect,
        "side-effect-by-key",
        lambda key: SideEffect.objects.filter(key=key).order_by()[:1],
        key,
    )
    if record is None:
        # The first attempt: recorded as started in one statement, committed
        # on its own (autocommit) before the effect. No other caller can
        # insert the key meanwhile: this one holds the key's lock.
        record = SideEffect.objects.create(
            key=key,
            task=task,
            kind=kind or key.split(":", 1)[0],
            attempts=1,
            started_at=timezone.now(),
        )
        return _finish(record, action(), found_by_lookup=False)
    if record.status == SideEffectStatus.DONE:
        return record.result
    if record.attempts:
        found = lookup() if lookup is not None else None
        if found is not None:
            return _finish(record, found, found_by_lookup=True)
        if lookup is None:
            raise SideEffectUncertain(key, record.attempts)
    SideEffect.objects.filter(pk=record.pk).update(
        attempts=F("attempts") + 1, started_at=timezone.now()
    )
    result = action()
    return _finish(record, result, found_by_lookup=False)


def settle(key: str, result: Result, *, prefix: bool = False) -> bool:
    """Close an unfinished record of `key` as done, with `result`: the caller
    found the effect already made without going through `perform_once` (a
    re-run that sees the pull request merged skips the merge). Without this,
    a worker that died after the effect took hold would leave its record
    `started` for good. With `prefix`, every unfinished record whose key
    starts with `key` (a merge's key names the head it merged). Returns
    whether a record was closed; none is made for an effect never attempted.
    """
    match = {"key__startswith": key} if prefix else {"key": key}
    return bool(
        SideEffect.objects.filter(**match, status=SideEffectStatus.STARTED).update(
            status=SideEffectStatus.DONE,
            result=result,
            done_at=timezone.now(),
            found_by_lookup=True,
        )
    )


def _finish(record: SideEffect, result: Result, *, found_by_lookup: bool) -> Result:
    # One UPDATE, atomic by itself (no transaction around it), sent as written.
    update_row(
        SideEffect,
        record.pk,
        {
            "status": SideEffectStatus.DONE,
            "result": result,
            "done_at": timezone.now(),
            "found_by_lookup": found_by_lookup,
        },
    )
    return result
