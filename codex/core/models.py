"""Optimistic locking and leases, shared by every model whose state workers change.

Spec 002 §3.5: every update carries the version it read and fails with
VERSION_MISMATCH when the row moved on; state-changing operations hold a 60-second
lease (acquire, renew, release; force-break only by an operator or recovery); a
lease held by someone else is retried 3 times with a 5-second backoff.

Both guarantees are enforced in the UPDATE's WHERE clause, so they hold between
processes and machines, not only between threads.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db import connections, models, router, transaction
from django.db.models import F, Q
from django.utils import timezone
from django_fsm import TransitionNotAllowed

from codex.core import statements


class VersionConflict(Exception):
    """The row changed since it was read (spec 002 §3.5 VERSION_MISMATCH)."""

    code = "version_mismatch"

    def __init__(self, obj: models.Model, expected: int) -> None:
        self.expected = expected
        super().__init__(
            f"{obj._meta.verbose_name} {obj} changed since it was read "
            f"(expected version {expected}); re-read it and try again"
        )


class LeaseUnavailable(Exception):
    """Someone else holds the lease and it has not expired."""

    code = "lease_held"

    def __init__(self, obj: models.Model, holder: str | None, expires_at) -> None:
        self.holder = holder
        self.expires_at = expires_at
        super().__init__(
            f"{obj._meta.verbose_name} {obj} is leased by {holder} until "
            f"{expires_at:%Y-%m-%d %H:%M:%S} UTC"
            if expires_at
            else f"{obj._meta.verbose_name} {obj} is leased by {holder}"
        )


class LeaseRequired(Exception):
    """A state change was saved without holding the lease."""

    code = "lease_required"


# Values that cannot change in place: the same object means the same value.
IMMUTABLE_VALUE_TYPES = (
    str,
    int,
    float,
    bool,
    type(None),
    date,
    timedelta,
    Decimal,
    uuid.UUID,
    bytes,
)


REFUSALS = (VersionConflict, LeaseUnavailable, LeaseRequired)


def one_change(
    write: Callable[[], None],
    then: Callable[[], None] | None = None,
    *,
    using: str | None = None,
) -> None:
    """Run `write()` (a versioned save) and then `then()` (what belongs to the
    same change: its events, callbacks) as one change: in a transaction of
    their own when none is open; inside a caller's transaction, part of it
    without a savepoint (SAVEPOINT and RELEASE are two round trips per save, a
    fifth of a worker step's statements).

    Without a savepoint an error marks the caller's whole transaction for
    rollback, which is what a failed write should do. A refusal of `write`
    itself is different: it is refused before anything is written (its UPDATE
    matched no row, or the lease was missing), and callers catch it and go on
    (an instance someone else stopped meanwhile). It is raised after the
    block, with the caller's transaction as it was. A refusal raised by `then`
    comes after writes and is an error like any other.
    """
    refused = None
    with transaction.atomic(using=using, savepoint=False):
        doomed = transaction.get_rollback(using=using)
        try:
            write()
        except REFUSALS as exc:
            refused = exc
            # Model.save_base marked the transaction for rollback on the way
            # out; nothing was written, so it goes back to what it was.
            transaction.set_rollback(doomed, using=using)
        else:
            if then is not None:
                then()
    if refused is not None:
        raise refused


def lease_is_free(now: datetime) -> Q:
    """Rows whose lease nobody holds or whose holder let it expire."""
    return Q(lease_holder__isnull=True) | Q(lease_expires_at__lte=now)


class VersionedLeasedModel(models.Model):
    """A model with an optimistic-lock `version` and a time-limited lease.

    Rules enforced here:
    - every save of an existing row raises `version` by one, and only succeeds when
      the row still has the version that was read (else VersionConflict);
    - a save that changes any field in `lease_guarded_fields` requires the caller
      to hold the lease, checked in the same UPDATE (else LeaseRequired), and no
      save succeeds while someone else holds an unexpired lease;
    - lease operations are single conditional UPDATEs, which bump `version` too.
    """

    version = models.PositiveIntegerField(default=1, editable=False)
    lease_holder = models.CharField(
        max_length=200, null=True, blank=True, editable=False
    )
    lease_expires_at = models.DateTimeField(null=True, blank=True, editable=False)
    updated_at = models.DateTimeField(auto_now=True)

    lease_guarded_fields: tuple[str, ...] = ()
    # When True, a save without update_fields writes only the columns that may
    # have changed since the row was read (see fields_to_write), not all of them.
    write_changed_fields_only: bool = False

    class Meta:
        abstract = True

    # -- loading -------------------------------------------------------------

    @classmethod
    def from_db(cls, db, field_names, values):
        instance = super().from_db(db, field_names, values)
        instance._remember_loaded_state()
        return instance

    def _remember_loaded_state(self) -> None:
        values = self.__dict__
        if self.write_changed_fields_only:
            # Every column, by reference (cheap): fields_to_write compares them.
            self._loaded_values = {
                name: values[name]
                for name in self._concrete_attnames()
                if name in values
            }
            for name in self._tracked_field_names():
                self._loaded_values.setdefault(name, None)
            return
        self._loaded_values = {
            name: values.get(name) for name in self._tracked_field_names()
        }

    @classmethod
    def _concrete_attnames(cls) -> tuple[str, ...]:
        names = cls.__dict__.get("_concrete_attnames_cache")
        if names is None:
            names = tuple(f.attname for f in cls._meta.concrete_fields)
            cls._concrete_attnames_cache = names
        return names

    def _tracked_field_names(self) -> tuple[str, ...]:
        return self.lease_guarded_fields

    def fields_to_write(self) -> list[str] | None:
        """The columns a save must write: all loaded ones except those still
        holding the very immutable object they were read with. Mutable values
        (JSON dicts and lists) are always written: they may have been changed
        in place. None when the load is not known (write everything).

        Leaving the rest out is safe because the save checks the version: no
        one else wrote the row since it was read (the lease heartbeat, which
        writes without a version, only moves lease_expires_at, which this
        leaves alone unless it was changed here).
        """
        loaded = getattr(self, "_loaded_values", None)
        if loaded is None:
            return None
        values = self.__dict__
        names = []
        for field in self._meta.concrete_fields:
            name = field.attname
            if field.primary_key or name not in values:
                continue  # deferred fields are not written either way
            value = values[name]
            if (
                name in loaded
                and value is loaded[name]
                and isinstance(value, IMMUTABLE_VALUE_TYPES)
            ):
                continue
            names.append(name)
        return names

    def changed_fields(self) -> set[str]:
        """Tracked fields whose value differs from what was loaded."""
        loaded = getattr(self, "_loaded_values", None)
        if loaded is None:
            return set()
        return {
            name
            for name, value in loaded.items()
            if name in self.__dict__ and self.__dict__[name] != value
        }

    def refresh_from_db(self, using=None, fields=None, **kwargs: Any) -> None:
        # django-fsm's FSMModelMixin un-protects state fields class-wide while it
        # refreshes, which races between threads. A protected field may be set
        # once per instance: forget this instance's values, then load them.
        names = fields or [field.attname for field in self._meta.concrete_fields]
        forgotten = {
            field.attname: self.__dict__.pop(field.attname)
            for field in self._meta.concrete_fields
            if getattr(field, "protected", False)
            and field.attname in names
            and field.attname in self.__dict__
        }
        try:
            super().refresh_from_db(using=using, fields=list(names), **kwargs)
        finally:
            for name, value in forgotten.items():  # only those not re-read
                self.__dict__.setdefault(name, value)
        if fields is None or not hasattr(self, "_loaded_values"):
            self._remember_loaded_state()
            return
        # A partial refresh must not make unsaved changes of other fields look saved.
        for name in fields:
            if name in self._loaded_values:
                self._loaded_values[name] = self.__dict__.get(name)

    # -- saving ----------------------------------------------------------------

    @property
    def held_lease(self) -> str | None:
        """The lease holder this in-memory object acquired, if it still holds it."""
        return getattr(self, "_held_lease", None)

    def save(self, *args: Any, release_lease: bool = False, **kwargs: Any) -> None:
        if self._state.adding:
            super().save(*args, **kwargs)
            self._remember_loaded_state()
            return
        changed_guarded = self.changed_fields() & set(self.lease_guarded_fields)
        if changed_guarded and not self.held_lease:
            raise LeaseRequired(
                f"changing {', '.join(sorted(changed_guarded))} of "
                f"{self._meta.verbose_name} {self} requires holding its lease"
            )
        update_fields = kwargs.get("update_fields")
        if update_fields is None and self.write_changed_fields_only and not args:
            update_fields = self.fields_to_write()
        if update_fields is not None:
            extra = {"version", "updated_at"}
            if release_lease:
                extra |= {"lease_holder", "lease_expires_at"}
            kwargs["update_fields"] = set(update_fields) | extra
        self._expected_version = self.version
        previous = (self.version, self.lease_holder, self.lease_expires_at)
        self.version += 1
        if release_lease:
            self.lease_holder = None
            self.lease_expires_at = None
        try:
            super().save(*args, **kwargs)
        except BaseException:
            self.version, self.lease_holder, self.lease_expires_at = previous
            raise
        finally:
            del self._expected_version
        if release_lease:
            self._held_lease = None
        self._remember_loaded_state()

    def _do_update(self, base_qs, using, pk_val, values, update_fields, forced_update):
        expected = getattr(self, "_expected_version", None)
        if expected is None:
            return super()._do_update(
                base_qs, using, pk_val, values, update_fields, forced_update
            )
        now = timezone.now()
        rows = self.__dict__.pop("_rows_with_update", None)
        if (
            rows
            and connections[using].vendor == "postgresql"
            and not base_qs.query.where
        ):
            update = statements.versioned_update_sql(
                self, using, pk_val, expected, now, self.held_lease, values
            )
            if update is not None:
                if statements.update_with_rows(update, rows, using):
                    return True
                self._raise_write_refused(expected, now)
        allowed = lease_is_free(now)
        if self.held_lease:
            allowed |= Q(lease_holder=self.held_lease)
        filtered = base_qs.filter(allowed, pk=pk_val, version=expected)
        if rows and not connections[using].in_atomic_block:
            # The caller counted on the one-statement write above and opened
            # no transaction: the UPDATE and its rows need one here.
            with transaction.atomic(using=using):
                if filtered._update(values) > 0:
                    statements.insert_rows(rows, using)
                    return True
        elif filtered._update(values) > 0:
            if rows:  # not in one statement: the caller writes them
                self._rows_with_update = rows
            return True
        self._raise_write_refused(expected, now)
        return False  # unreachable; keeps the contract visible

    def _raise_write_refused(self, expected: int, now: datetime) -> None:
        current = (
            type(self)
            ._base_manager.filter(pk=self.pk)
            .values("version", "lease_holder", "lease_expires_at")
            .first()
        )
        if current is None or current["version"] != expected:
            raise VersionConflict(self, expected)
        raise LeaseUnavailable(
            self, current["lease_holder"], current["lease_expires_at"]
        )

    def save_with_rows(
        self,
        save: Callable[[], None],
        rows: list[models.Model],
        after_save: list[Callable[[], None]] | tuple = (),
        *,
        using: str | None = None,
    ) -> None:
        """Run `save()` (this model's save) and write `rows` (unsaved rows that
        belong to the change: its events, the next step's job; a foreign key of
        theirs may point at a new self) and then the `after_save` callbacks
        with it, as one change.

        On PostgreSQL the row and its rows are one statement (codex.core.
        statements), atomic by itself, so outside a transaction no BEGIN/COMMIT
        is sent either: an UPDATE goes to `_do_update` with its rows, a new row
        is inserted with them (like bulk_create, without model signals).
        Elsewhere, or with callbacks, they are written one after the other in
        one transaction. Inside a caller's transaction there is no savepoint
        (see one_change); an IntegrityError of the one statement aborts that
        transaction (PostgreSQL), so a caller that tries again keeps a
        savepoint of its own.
        """
        using = using or self._state.db or router.db_for_write(type(self))
        connection = transaction.get_connection(using)
        in_one_statement = bool(rows) and connection.vendor == "postgresql"
        if in_one_statement and self._state.adding and not after_save:
            statements.insert_with_rows(self, rows, using)
            self._remember_loaded_state()
            return
        if rows and not self._state.adding:
            self._rows_with_update = rows
            rows = []

        def write_the_rest() -> None:
            left = self.__dict__.pop("_rows_with_update", None) or rows
            statements.insert_rows(left, using)
            for callback in after_save:
                callback()

        try:
            if in_one_statement and not after_save and not connection.in_atomic_block:
                # _do_update opens a transaction if it falls back to two.
                save()
                write_the_rest()  # nothing, unless no UPDATE was needed
            else:
                one_change(save, write_the_rest, using=using)
        finally:
            self.__dict__.pop("_rows_with_update", None)

    # -- leases ----------------------------------------------------------------

    @property
    def lease_is_active(self) -> bool:
        """Whether the lease as last read is held and unexpired."""
        return bool(
            self.lease_holder
            and self.lease_expires_at
            and self.lease_expires_at > timezone.now()
        )

    def _lease_update(self, condition: Q, **values: Any) -> bool:
        """One conditional UPDATE that also bumps the version; True if it applied."""
        values["updated_at"] = timezone.now()
        count = (
            VersionedQuerySet(type(self))
            .filter(pk=self.pk, version=self.version)
            .filter(condition)
            ._update_with_version(**values)
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
        someone else is waited for `backoff_seconds` between `attempts` (spec: 3
        attempts, 5 s). Raises LeaseUnavailable when it never frees up.
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
                lease_is_free(now) | Q(lease_holder=holder),
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
        if not self._lease_update(Q(lease_holder=holder), lease_expires_at=expires):
            self.refresh_from_db(fields=["version", "lease_holder", "lease_expires_at"])
            if self.lease_holder != holder:
                self._held_lease = None
                raise LeaseUnavailable(self, self.lease_holder, self.lease_expires_at)
            if not self._lease_update(Q(lease_holder=holder), lease_expires_at=expires):
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
        if self._lease_update(
            Q(lease_holder=holder), lease_holder=None, lease_expires_at=None
        ):
            return True
        self.refresh_from_db(fields=["version", "lease_holder", "lease_expires_at"])
        if self.lease_holder != holder:
            return False
        return self._lease_update(
            Q(lease_holder=holder), lease_holder=None, lease_expires_at=None
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
            self._lease_update(Q(), lease_holder=None, lease_expires_at=None)
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


class VersionedQuerySet(models.QuerySet):
    """Refuses bulk updates of state fields, which would skip versions and leases."""

    protected_update_fields: frozenset[str] = frozenset()

    def update(self, **kwargs: Any) -> int:
        refused = set(kwargs) & (self.protected_update_fields | {"version"})
        if refused:
            raise LeaseRequired(
                f"bulk updates of {', '.join(sorted(refused))} bypass versions and "
                "leases; load the rows and use their transitions"
            )
        return self._update_with_version(**kwargs)

    def _update_with_version(self, **kwargs: Any) -> int:
        kwargs.setdefault("updated_at", timezone.now())
        return super().update(version=F("version") + 1, **kwargs)

    def bulk_update(self, objs, fields, batch_size=None):
        refused = set(fields) & (self.protected_update_fields | {"version"})
        if refused:
            raise LeaseRequired(
                f"bulk updates of {', '.join(sorted(refused))} bypass versions "
                "and leases"
            )
        return super().bulk_update(objs, fields, batch_size)


class SideEffectStatus(models.TextChoices):
    STARTED = "started", "Started"
    DONE = "done", "Done"


class SideEffect(models.Model):
    """The record of one side effect outside the database (codex.core.side_effects).

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
