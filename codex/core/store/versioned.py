"""Optimistic locking and leases, shared by every model whose state workers change.

As docs/domain/concurrency.md#versions and #leases tell it: every update carries
the version it read and fails with VERSION_MISMATCH when the row moved on;
state-changing operations hold a 60-second lease (acquire, renew, release;
force-break only by an operator or recovery); a lease held by someone else is
retried 3 times with a 5-second backoff.

Both guarantees are enforced in the UPDATE's WHERE clause, so they hold between
processes and machines, not only between threads.

The lease operations are in codex.core.store.leases (LeaseMethods, mixed into
VersionedLeasedModel), the exceptions in codex.core.store.refusals and the
queryset in codex.core.store.querysets; the apps import all of them from the
store's front door, codex.core.store.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any

from django.db import models, router, transaction
from django.utils import timezone

from codex.core.store import statements
from codex.core.store.compiled_query import first_row
from codex.core.store.django_internals import FastPathInvariantError
from codex.core.store.leases import LeaseMethods
from codex.core.store.leases import lease_is_free as lease_is_free  # re-export
from codex.core.store.plain_updates import update_row
from codex.core.store.querysets import (
    VersionedQuerySet as VersionedQuerySet,  # re-export
)
from codex.core.store.refusals import (
    REFUSALS,
    LeaseRequired,
    LeaseUnavailable,
    VersionConflict,
)

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


class VersionedLeasedModel(LeaseMethods, models.Model):
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
    # The save in progress, for _do_update (see writing); None between saves.
    _versioned_write: statements.VersionedWrite | None = None
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
        whole = fields is None and not kwargs and not self.get_deferred_fields()
        names = fields or [field.attname for field in self._meta.concrete_fields]
        forgotten = {
            field.attname: self.__dict__.pop(field.attname)
            for field in self._meta.concrete_fields
            if getattr(field, "protected", False)
            and field.attname in names
            and field.attname in self.__dict__
        }
        try:
            if not (whole and self._refresh_compiled(using)):
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

    def _refresh_compiled(self, using: str | None) -> bool:
        """A whole refresh by primary key through a query compiled once per
        model (codex.core.store.compiled_query): the steps re-read their rows often,
        and compiling the read cost more than running it. Sets what Django's
        refresh_from_db(fields=None) sets, for an instance with no deferred
        field. False (nothing done) where that query does not fit: another
        database, no key."""
        model = type(self)
        using = using or self._state.db or router.db_for_read(model)
        if using != router.db_for_read(model) or not isinstance(self.pk, (int, str)):
            return False
        fresh = first_row(
            model,
            f"refresh:{model._meta.label}",
            lambda pk: model._base_manager.filter(pk=pk).order_by()[:1],
            self.pk,
        )
        if fresh is None:
            raise model.DoesNotExist(
                f"{model._meta.object_name} matching query does not exist."
            )
        self._prefetched_objects_cache = {}
        for field in self._meta.concrete_fields:
            setattr(self, field.attname, fresh.__dict__[field.attname])
            if field.is_relation and field.is_cached(self):
                field.delete_cached_value(self)
        for relation in self._meta.related_objects:
            if relation.is_cached(self):
                relation.delete_cached_value(self)
        for field in self._meta.private_fields:
            if field.is_relation and field.is_cached(self):
                field.delete_cached_value(self)
        self._state.db = fresh._state.db
        return True

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
        with self.writing() as write:
            if write.expected_version is not None:
                raise FastPathInvariantError(
                    f"a save of {self._meta.label} {self.pk} began inside its own save"
                )
            write.expected_version = self.version
            write.holder = self.held_lease
            write.sent = False
            previous = (self.version, self.lease_holder, self.lease_expires_at)
            self.version += 1
            if release_lease:
                self.lease_holder = None
                self.lease_expires_at = None
            try:
                super().save(*args, **kwargs)
                if not write.sent:
                    raise FastPathInvariantError(
                        f"Model.save() of {self._meta.label} {self.pk} never "
                        "called _do_update, so its version went unchecked: "
                        "re-check codex.core.store.django_internals"
                    )
            except BaseException:
                self.version, self.lease_holder, self.lease_expires_at = previous
                raise
            finally:
                write.expected_version = None
        if release_lease:
            self._held_lease = None
        self._remember_loaded_state()

    @contextmanager
    def writing(self) -> Iterator[statements.VersionedWrite]:
        """The versioned write in progress on this object for the block: the
        one save_with_rows attached, or a new one. Django's save() has no
        argument to carry it to `_do_update`, so it rides on the object (one
        typed attribute, `_versioned_write`) for the block only."""
        write = self._versioned_write
        if write is not None:
            yield write
            return
        self._versioned_write = write = statements.VersionedWrite()
        try:
            yield write
        finally:
            del self._versioned_write

    def _do_update(self, base_qs, using, pk_val, values, update_fields, forced_update):
        # Django's hook for the UPDATE of a save; its signature is pinned by
        # codex.core.store.django_internals. A versioned save goes to the fast path.
        write = self._versioned_write
        if write is None or write.expected_version is None:
            return super()._do_update(
                base_qs, using, pk_val, values, update_fields, forced_update
            )
        now = timezone.now()
        if statements.update_versioned_row(
            self,
            write,
            base_qs=base_qs,
            using=using,
            pk_val=pk_val,
            values=values,
            now=now,
        ):
            return True
        self._raise_write_refused(write.expected_version, now)
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

    # -- rows and callbacks that ride on the next save --------------------------

    def write_with_save(self, row: models.Model) -> None:
        """Queue `row` (an event, the next step's job) to be written by the
        next `save_with_queued`, in its statement or transaction."""
        self.__dict__.setdefault("_rows_with_save", []).append(row)

    def on_save(self, callback: Callable[[], None]) -> None:
        """Run `callback` inside the next `save_with_queued`'s transaction,
        after the update."""
        self.__dict__.setdefault("_callbacks_with_save", []).append(callback)

    def queued_with_save(self) -> tuple[list[models.Model], list[Callable]]:
        """What the next save writes besides the row: (rows, callbacks)."""
        return (
            self.__dict__.get("_rows_with_save", []),
            self.__dict__.get("_callbacks_with_save", []),
        )

    def save_with_queued(
        self, save: Callable[[], None], *, using: str | None = None
    ) -> None:
        """`save_with_rows` with what was queued by `write_with_save` and
        `on_save`. Written or rolled back with a refused write, either way the
        queue belonged to this attempt, not to the next save after a re-read."""
        rows, callbacks = self.queued_with_save()
        try:
            self.save_with_rows(save, rows, callbacks, using=using)
        finally:
            self._rows_with_save = []
            self._callbacks_with_save = []

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
        is sent either: an UPDATE goes to `_do_update` with its rows (in the
        VersionedWrite of `writing`), a new row is inserted with them (like
        bulk_create, without model signals).
        Elsewhere, or with callbacks, they are written one after the other in
        one transaction. Inside a caller's transaction there is no savepoint
        (see one_change); an IntegrityError of the one statement aborts that
        transaction (PostgreSQL), so a caller that tries again keeps a
        savepoint of its own.
        """
        using = using or self._state.db or router.db_for_write(type(self))
        connection = transaction.get_connection(using)
        in_one_statement = bool(rows) and connection.vendor == "postgresql"
        if self._state.adding:
            if in_one_statement and not after_save:
                statements.insert_with_rows(self, rows, using)
                self._remember_loaded_state()
                return

            def write_the_rest() -> None:
                statements.insert_rows(rows, using)
                for callback in after_save:
                    callback()

            one_change(save, write_the_rest, using=using)
            return
        with self.writing() as write:
            write.rows = list(rows)

            def rows_written_then_callbacks() -> None:
                if write.rows and not write.rows_written:
                    raise FastPathInvariantError(
                        f"the save of {self._meta.label} {self.pk} did not "
                        "write the rows of its change"
                    )
                for callback in after_save:
                    callback()

            if in_one_statement and not after_save and not connection.in_atomic_block:
                # update_versioned_row opens a transaction if it falls back
                # to two statements.
                save()
                rows_written_then_callbacks()
            else:
                one_change(save, rows_written_then_callbacks, using=using)

    def write_unversioned(self, **values: Any) -> None:
        """Write `values` (field names) to this row without checking or
        raising its version, and set them here: the one way to write around
        the version, for columns no other writer decides on (a heartbeat, a
        last-activity stamp, a run's link to its instance), written often
        beside the row's owner (docs/domain/concurrency.md#versions)."""
        update_row(type(self), self.pk, values)
        for name, value in values.items():
            setattr(self, name, value)

    # -- leases: codex.core.store.leases.LeaseMethods ------------------------------
