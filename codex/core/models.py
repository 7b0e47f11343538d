"""The core app's models, where Django looks for them: the record of a
side effect (codex.core.store), the worker clusters (codex.core.workers)
and the API's idempotency records (codex.core.api)."""

from codex.core.api.idempotency_record import IdempotencyRecord
from codex.core.store.side_effects import SideEffect, SideEffectStatus
from codex.core.workers.clusters import WorkerCluster

__all__ = ["IdempotencyRecord", "SideEffect", "SideEffectStatus", "WorkerCluster"]
