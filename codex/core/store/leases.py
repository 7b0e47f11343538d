"""Leases of versioned rows: acquire, renew, release, break
(docs/domain/concurrency.md#leases).

`LeaseMethods` is the lease half of codex.core.store.versioned.VersionedLeasedModel, a
plain mixin without fields: the model declares `version`, `lease_holder`,
`lease_expires_at` and `updated_at`, and provides the versioned save,
`held_lease`, `changed_fields` and `refresh_from_db` that these methods use.
A lease lasts CODEX_LEASE_SECONDS (60); acquire_lease tries a lease held by
someone else CODEX_LEASE_RETRY_ATTEMPTS times (3),
CODEX_LEASE_RETRY_BACKOFF_SECONDS (5) apart.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import connections, router, transaction
from django.db.models import Model, Q
from django.utils import timezone
from django_fsm import TransitionNotAllowed

from codex.core.store.plain_updates import update_row
from codex.core.store.refusals import LeaseRequired, LeaseUnavailable, VersionConflict

if TYPE_CHECKING:
    from codex.core.store.versioned import VersionedLeasedModel


def lease_is_free(now: datetime) -> Q:
    """Rows whose lease nobody holds or whose holder let it expire."""
    return Q(lease_holder__isnull=True) | Q(lease_expires_at__lte=now)


def lease_clause(
    model: type[Model], connection: Any, now: datetime, holder: str | None
) -> tuple[str, list]:
    """`lease_is_free(now)`, or held by `holder` when one is given, as SQL
    and its parameters: for statements written out directly."""
    quote = connection.ops.quote_name
    expires = model._meta.get_field("lease_expires_at")
    sql = f"{quote('lease_holder')} IS NULL OR {quote(expires.column)} <= %s"
    params = [expires.get_db_prep_value(now, connection)]
    if holder:
        sql += f" OR {quote('lease_holder')} = %s"
        params.append(holder)
    return sql, params


class LeaseMethods:
    """The lease operations of VersionedLeasedModel, which mixes this class in.

    Leases are taken, renewed, released and broken by conditional UPDATEs that
    bump `version` too (keep_lease_alive leaves it alone: see there); the
    model's save requires the lease these methods record in `_held_lease`.
    """

    # -- leases ----------------------------------------------------------------

    @property
    def lease_is_active(self) -> bool:
        """Whether the lease as last read is held and unexpired."""
        return bool(
            self.lease_holder
            and self.lease_expires_at
            and self.lease_expires_at > timezone.now()
        )

    def _lease_update(
        self, *, holder: str | None = None, free_at: datetime | None = None, **values
    ) -> bool:
        """One conditional UPDATE of the row at the version read, held by
        `holder` (or free at `free_at` too, when given; with neither, whoever
        holds it), that also bumps the version. True if it applied.

        Written out directly (codex.core.store.plain_updates), not compiled from a
        queryset: every step takes and gives back its task's lease."""
        model = type(self)
        connection = connections[router.db_for_write(model)]
        quote = connection.ops.quote_name
        values["updated_at"] = timezone.now()
        condition, params = f"{quote('version')} = %s", [self.version]
        if free_at is not None:
            lease, lease_params = lease_clause(model, connection, free_at, holder)
            condition += f" AND ({lease})"
            params += lease_params
        elif holder:
            condition += f" AND {quote('lease_holder')} = %s"
            params.append(holder)
        count = update_row(
            model,
            self.pk,
            values,
            condition=condition,
            condition_params=params,
            bump_version=True,
        )
        if count:
            self.version += 1
            for name, value in values.items():
                setattr(self, name, value)
        return bool(count)

    def acquire_lease(
        self,
        holder: str,
        *,
        attempts: int | None = None,
        backoff_seconds: float | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        """Take the lease for `holder` for CODEX_LEASE_SECONDS.

        A version that moved on is re-read and tried again at once; a lease held by
        someone else is waited for `backoff_seconds` between `attempts` (3
        attempts, 5 s apart by default: docs/domain/concurrency.md#leases).
        Raises LeaseUnavailable when it never frees up.
        """
        attempts = attempts or settings.CODEX_LEASE_RETRY_ATTEMPTS
        if backoff_seconds is None:
            backoff_seconds = settings.CODEX_LEASE_RETRY_BACKOFF_SECONDS
        held_attempts = 0
        rereads = 0
        while True:
            now = timezone.now()
            took_over = (
                self.lease_holder not in (None, holder) and not self.lease_is_active
            )
            previous_holder = self.lease_holder
            applied = self._lease_update(
                holder=holder,
                free_at=now,
                lease_holder=holder,
                lease_expires_at=now + timedelta(seconds=settings.CODEX_LEASE_SECONDS),
            )
            if applied:
                self._held_lease = holder
                if took_over:
                    self.on_lease_taken_over(previous_holder, holder)
                return
            self._reread_before_lease()
            if self.lease_is_active and self.lease_holder != holder:
                held_attempts += 1
                if held_attempts >= attempts:
                    raise LeaseUnavailable(
                        self, self.lease_holder, self.lease_expires_at
                    )
                sleep(backoff_seconds)
            else:
                rereads += 1
                if rereads > 20:  # the row is being rewritten continuously
                    raise LeaseUnavailable(
                        self, self.lease_holder, self.lease_expires_at
                    )

    def change_and_save(
        self,
        holder: str,
        change: Callable[[], Any],
        *,
        lease_attempts: int = 1,
        backoff_seconds: float | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        """Run `change()` (a transition) as `holder` and save it in one UPDATE.

        A caller that already holds the lease as `holder` changes and saves
        under it, and keeps it (it releases it when its step ends). Otherwise
        the lease is momentary: the UPDATE that writes the change also checks,
        in its WHERE clause, the version read and that the lease is free,
        expired or `holder`'s, and leaves the row without a lease. That is what
        acquire, save and release did in three writes, in one; the version
        rises by one.

        A live lease of someone else is waited for like `acquire_lease` does
        (`lease_attempts`, `backoff_seconds`) and then raises LeaseUnavailable.
        A version that moved on between the read and the write is re-read once
        and reported as VersionConflict (two people acting on what they saw:
        the first one wins). A change refused by the copy's state
        (TransitionNotAllowed) is judged once more on the current row when the
        copy turns out to be old, as taking the lease first used to re-read
        it. After a refusal the object holds the row as it is now.
        """
        if self.held_lease == holder:
            change()
            self.save()
            return
        if backoff_seconds is None:
            backoff_seconds = settings.CODEX_LEASE_RETRY_BACKOFF_SECONDS
        # As in _reread_before_lease: state changed before the call cannot be
        # carried over onto a row that moved on.
        unsaved = bool(self.changed_fields() & set(self.lease_guarded_fields))
        waits = 0
        fresh = False  # whether the object was just read from the row
        while True:
            if self.lease_is_active and self.lease_holder != holder:
                if not fresh:  # the copy may be old: is the lease still there?
                    self.refresh_from_db()
                    fresh = True
                    continue
                waits += 1
                if waits >= lease_attempts:
                    raise LeaseUnavailable(
                        self, self.lease_holder, self.lease_expires_at
                    )
                sleep(backoff_seconds)
                self.refresh_from_db()
                continue
            expected = self.version
            try:
                self._change_and_save_once(holder, change)
                return
            except TransitionNotAllowed:
                # Judged on the copy we were given, which may be old: taking
                # the lease used to re-read it, so judge the current row once.
                if fresh:
                    raise
                self.refresh_from_db()
                fresh = True
                if self.version == expected:
                    raise
                if unsaved:
                    raise VersionConflict(self, expected) from None
            except (VersionConflict, LeaseUnavailable):
                # Nothing was written. Drop the half-applied change and show the
                # caller the row as it is now, then report why: a lease taken
                # meanwhile is waited for above; otherwise someone else changed
                # the row between our read and our write, and their change wins.
                self.refresh_from_db()
                fresh = True
                if self.lease_is_active and self.lease_holder != holder:
                    continue
                raise VersionConflict(self, expected) from None

    def _change_and_save_once(self, holder: str, change: Callable[[], Any]) -> None:
        """One attempt of change_and_save under a momentary lease."""
        previous_holder = self.lease_holder
        took_over = previous_holder not in (None, holder)  # and expired: see above
        held = self.held_lease
        self._held_lease = holder  # for the guards and the save's WHERE clause
        try:
            change()
            if not took_over:
                self.save(release_lease=True)
                return
            # Rare: the row carries a dead worker's lease. Its takeover is
            # logged in the same transaction as the write that clears it.
            with transaction.atomic():
                self.save(release_lease=True)
                self.on_lease_taken_over(previous_holder, holder)
        except BaseException:
            self._held_lease = held
            raise

    def _reread_before_lease(self) -> None:
        """The row moved on: read all of it, so that what the lease holder does
        next is checked against the current state, not the one loaded earlier.
        Unsaved state changes made before taking the lease cannot be reconciled.
        """
        unsaved = self.changed_fields() & set(self.lease_guarded_fields)
        expected = self.version
        self.refresh_from_db()
        if unsaved and self.version != expected:
            raise VersionConflict(self, expected)

    def renew_lease(self) -> None:
        """Extend the held lease by CODEX_LEASE_SECONDS from now."""
        holder = self.held_lease
        if not holder:
            raise LeaseRequired(f"{self} has no lease to renew")
        expires = timezone.now() + timedelta(seconds=settings.CODEX_LEASE_SECONDS)
        if not self._lease_update(holder=holder, lease_expires_at=expires):
            self.refresh_from_db(fields=["version", "lease_holder", "lease_expires_at"])
            if self.lease_holder != holder:
                self._held_lease = None
                raise LeaseUnavailable(self, self.lease_holder, self.lease_expires_at)
            if not self._lease_update(holder=holder, lease_expires_at=expires):
                raise VersionConflict(self, self.version)

    def keep_lease_alive(self, holder: str) -> bool:
        """Extend `holder`'s lease from another thread, without a version bump.

        Only the holder writes the row while it holds the lease, so pushing the
        expiry out changes nothing anyone could have read; bumping the version
        would instead make the holder's own next save fail. False when the lease
        was lost (expired and taken, or broken).
        """
        expires = timezone.now() + timedelta(seconds=settings.CODEX_LEASE_SECONDS)
        return bool(
            type(self)
            ._base_manager.filter(pk=self.pk, lease_holder=holder)
            .update(lease_expires_at=expires)
        )

    def release_lease(self) -> bool:
        """Give the lease back; False when it had been lost (expired and taken)."""
        holder = self.held_lease
        if not holder:
            return False
        self._held_lease = None
        if self._lease_update(holder=holder, lease_holder=None, lease_expires_at=None):
            return True
        self.refresh_from_db(fields=["version", "lease_holder", "lease_expires_at"])
        if self.lease_holder != holder:
            return False
        return self._lease_update(
            holder=holder, lease_holder=None, lease_expires_at=None
        )

    def break_lease(self, *, by: str, reason: str = "") -> str | None:
        """Operator or recovery action: drop whoever holds the lease.

        Returns the holder that was removed (None when nobody held it).
        """
        with transaction.atomic():
            locked = (
                (type(self)._base_manager.select_for_update().filter(pk=self.pk))
                .values("lease_holder", "version")
                .first()
            )
            if locked is None:
                raise VersionConflict(self, self.version)
            self.version = locked["version"]
            previous = locked["lease_holder"]
            self._lease_update(lease_holder=None, lease_expires_at=None)
            self._held_lease = None
            self.on_lease_broken(previous, by=by, reason=reason)
        return previous

    @contextmanager
    def leased(
        self, holder: str, **acquire_options: Any
    ) -> Iterator[VersionedLeasedModel]:
        """Hold the lease for the duration of the block; released on the way out."""
        self.acquire_lease(holder, **acquire_options)
        try:
            yield self
        finally:
            if self.held_lease == holder:
                self.release_lease()

    # Hooks for subclasses that log to the event trail.
    def on_lease_taken_over(self, previous_holder: str | None, holder: str) -> None:
        """Called after an expired lease of another holder was taken over."""

    def on_lease_broken(
        self, previous_holder: str | None, *, by: str, reason: str
    ) -> None:
        """Called (inside the transaction) after an operator broke the lease."""
