"""The store: how Codex's rows change safely (docs/domain/concurrency.md).

Versioned models and their leases (a write with a stale version fails, a
state change needs the lease; `write_unversioned` is the one way around the
version, for heartbeats and stamps), state machines whose transitions go to the
event log in the same statement, side effects outside the database made at
most once, and the fast path that writes a step in one statement and reads
its hot rows through queries compiled once: the apps declare such a lookup
on a queryset (`hot_row` and its kin, codex.core.store.hot) and call it as
plain Django (docs/architecture.md#fast-path).
This is its front door: the apps import these names from here, never from
its modules.
"""

from codex.core.store.event_rows import register_event_row_factory
from codex.core.store.hot import hot_aggregate, hot_row, hot_rows, hot_values
from codex.core.store.leases import lease_is_free
from codex.core.store.logged_state import LoggedStateModel, default_reason, positive
from codex.core.store.querysets import VersionedQuerySet
from codex.core.store.refusals import LeaseRequired, LeaseUnavailable, VersionConflict
from codex.core.store.side_effects import (
    SideEffect,
    SideEffectStatus,
    SideEffectUncertain,
    exclusive,
    perform_once,
    settle,
)
from codex.core.store.versioned import VersionedLeasedModel, one_change

__all__ = [
    "LeaseRequired",
    "LeaseUnavailable",
    "LoggedStateModel",
    "SideEffect",
    "SideEffectStatus",
    "SideEffectUncertain",
    "VersionConflict",
    "VersionedLeasedModel",
    "VersionedQuerySet",
    "default_reason",
    "exclusive",
    "hot_aggregate",
    "hot_row",
    "hot_rows",
    "hot_values",
    "lease_is_free",
    "one_change",
    "perform_once",
    "positive",
    "register_event_row_factory",
    "settle",
]
