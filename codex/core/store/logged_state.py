"""State machines on versioned models whose transitions go to the event log.

Shared by claims, backlog runs, board items, agent instances and agent runs:
a transition queues its event (see `record_transition_event`); `save()` writes
the row and the queued events in one transaction (a new row with them in one
statement, where its model allows: `event_id_key`), so a save refused by the
version check (VersionConflict) leaves no event behind. `perform()` is the one
entry point for workers, webhooks and the admin.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any

from django.db import connections, models, router
from django_fsm import TransitionNotAllowed

from codex.core.store import statements
from codex.core.store.event_rows import event_row
from codex.core.store.versioned import VersionedLeasedModel, one_change


class LoggedStateModel(VersionedLeasedModel):
    """A versioned model whose `state_field` transitions are written to the log.

    Subclasses set `event_kind`, `state_field` (default "status") and implement
    `event_subject`; `event_fields()` adds fields every event carries (the task),
    `after_transition()` applies rules that follow a transition automatically.
    `event_id_key`: the key of the events' data that holds the row's id, when
    that is the only place they name it; a new row then goes in with its
    events in one statement on PostgreSQL (its id taken there), instead of
    an INSERT, then the events, in a transaction.
    """

    event_kind: str = ""
    state_field: str = "status"
    event_id_key: str = ""

    class Meta:
        abstract = True

    @property
    def event_subject(self) -> str:
        """The event log's `subject` for this object, e.g. "instance:work-1-a1"."""
        raise NotImplementedError

    def event_fields(self) -> dict[str, Any]:
        """Fields every event about this object carries (task, data)."""
        return {"task_id": getattr(self, "task_id", None)}

    def after_transition(self, name: str, *, by: str) -> None:
        """Hook: runs after transition `name` changed the state, before saving
        (a third failure blocks a claim)."""

    def record(self, *, by: str, reason: str = "", **fields: Any) -> None:
        """Queue an event; it is written in the same transaction as the next save
        (after it, so a new row's id is known)."""
        self.__dict__.setdefault("_pending_events", []).append(
            {"actor": by, "reason": reason, **fields}
        )

    def _build_event(self, queued: dict[str, Any]) -> models.Model:
        values = self.event_fields()
        data = {**values.pop("data", {}), **queued.pop("data", {})}
        return event_row(
            kind=self.event_kind,
            subject=self.event_subject,
            data=data,
            **values,
            **queued,
        )

    def save(self, *args: Any, **kwargs: Any) -> None:
        pending = self.__dict__.get("_pending_events", [])
        using = kwargs.get("using")
        try:
            one_statement_on = self._one_statement_database(pending, args, kwargs)
            if self._state.adding and one_statement_on:
                # The row and its events in one statement; the events' data
                # takes the new row's id from it (codex.core.store.statements).
                # Django's save refuses an unsaved related object: so does this.
                self._prepare_related_fields_for_save(operation_name="save")
                statements.insert_with_rows(
                    self,
                    [self._build_event(dict(queued)) for queued in pending],
                    one_statement_on,
                    key_in_json=("data", self.event_id_key),
                )
                self._remember_loaded_state()
            elif self._state.adding:
                # The events name the new row's id: built once it has one.
                one_change(
                    lambda: super(LoggedStateModel, self).save(*args, **kwargs),
                    lambda: statements.insert_rows(
                        [self._build_event(dict(queued)) for queued in pending],
                        self._state.db,
                    ),
                    using=using,
                )
            else:
                self.save_with_rows(
                    lambda: super(LoggedStateModel, self).save(*args, **kwargs),
                    [self._build_event(dict(queued)) for queued in pending],
                    using=using,
                )
        finally:
            self._pending_events = []

    def _one_statement_database(
        self, pending: list, args: tuple, kwargs: dict[str, Any]
    ) -> str | None:
        """The database a new row goes to with its events as one statement,
        or None: on PostgreSQL, for a model whose events name its id only
        under `event_id_key` of their data, in a plain save of a row whose id
        the database gives (the statement inserts no id of the caller's)."""
        plain_save = not args and set(kwargs) <= {"using"}
        if not (self.event_id_key and pending and plain_save) or self.pk is not None:
            return None
        using = kwargs.get("using") or router.db_for_write(type(self))
        return using if connections[using].vendor == "postgresql" else None

    def perform(
        self,
        action: str,
        *,
        by: str,
        reason: str = "",
        also: dict[str, Any] | None = None,
        **arguments: Any,
    ):
        """Run transition `action` and save it with its event, atomically;
        `also` sets more fields (attribute: value) in the same UPDATE.

        Raises TransitionNotAllowed (wrong state or a guard said no) or
        VersionConflict (someone else changed the row since it was read);
        nothing is written then.
        """
        method = getattr(self, action, None)
        if method is None or not hasattr(method, "_django_fsm"):
            raise TransitionNotAllowed(
                f"{action!r} is not a transition of {self._meta.verbose_name}"
            )
        if reason:
            arguments["reason"] = reason
        snapshot = {f.attname: getattr(self, f.attname) for f in self._meta.fields}
        try:
            method(by=by, **arguments)
            for name, value in (also or {}).items():
                setattr(self, name, value)
            # Only what the transition changed is written, so liveness stamps
            # another process wrote meanwhile (heartbeat, pid) are not lost.
            changed = [
                f.name
                for f in self._meta.concrete_fields
                if getattr(self, f.attname) != snapshot[f.attname]
            ]
            self.save(update_fields=changed)
        except BaseException:
            # Leave the in-memory object as it was read, not half-transitioned.
            self.__dict__.update(snapshot)
            self._pending_events = []
            raise
        return self


def record_transition_event(sender, instance, name, source, target, **kwargs) -> None:
    """django-fsm post_transition receiver for LoggedStateModel subclasses."""
    if not isinstance(instance, LoggedStateModel):
        return
    method_kwargs = kwargs.get("method_kwargs") or {}
    by = str(method_kwargs.get("by") or "unknown")
    instance.record(
        by=by,
        reason=str(method_kwargs.get("reason") or default_reason(instance, name)),
        field=instance.state_field,
        source=source,
        target=target,
        data={"transition": name},
    )
    instance.after_transition(name, by=by)


def default_reason(instance: object, name: str) -> str:
    """The transition method's default `reason`, for events whose caller gave none."""
    return _default_reason(type(instance), name)


@functools.cache
def _default_reason(cls: type, name: str) -> str:
    # inspect.signature is slow and the answer never changes: once per method.
    default = inspect.signature(getattr(cls, name)).parameters.get("reason")
    if default is None or default.default is inspect.Parameter.empty:
        return name
    return str(default.default)


def positive(field: str) -> models.Q:
    """A CheckConstraint condition: `field` is null or at least 1."""
    return models.Q(**{f"{field}__isnull": True}) | models.Q(**{f"{field}__gte": 1})
