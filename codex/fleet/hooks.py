"""What the fleet's jobs ask of the tasks its instances and runs serve,
registered by the tasks app from its AppConfig.ready(), so that the fleet
imports no app above it (docs/architecture.md#layer-debts):

- `register_finished_task_statuses(statuses)`: a task in one of them is
  finished, and its instances are no longer parked (the heartbeat job may
  terminate them when silent);
- `on_reaped_run(handler)`: `handler(task)` re-queues the task of a run the
  heartbeat job failed, when a worker would pick it up, and answers whether
  it did;
- `on_live_worktrees(provider)`: `provider(root)` yields the worktree paths
  under `root` that are live besides the running instances' own;
- `on_abandoned_work(handler)`: `handler(task_pk, reason, by)` stops the task
  whose coding instances the review limits abandoned, for a person to decide.

Unlike the worker runtime's hooks, a handler that raises is not caught: it
fails the job's step as the work it stands for always did.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

_FINISHED_TASK_STATUSES: set[str] = set()
_REAPED_RUN: list[Callable[[Any], bool]] = []
_LIVE_WORKTREES: list[Callable[[Path], Iterable[str]]] = []
_ABANDONED_WORK: list[Callable[[int, str, str], Any]] = []


def _register(handlers: list, handler: Callable) -> Callable:
    if handler not in handlers:
        handlers.append(handler)
    return handler


def register_finished_task_statuses(statuses: Iterable[str]) -> None:
    """Have the fleet treat a task in one of `statuses` as finished."""
    _FINISHED_TASK_STATUSES.update(statuses)


def finished_task_statuses() -> list[str]:
    """The statuses of a finished task, in a stable order (for SQL)."""
    return sorted(_FINISHED_TASK_STATUSES)


def on_reaped_run(handler: Callable[[Any], bool]) -> Callable[[Any], bool]:
    """Register `handler(task)` for the task of a run reaped as silent."""
    return _register(_REAPED_RUN, handler)


def on_live_worktrees(
    provider: Callable[[Path], Iterable[str]],
) -> Callable[[Path], Iterable[str]]:
    """Register `provider(root)`, yielding more live worktree paths."""
    return _register(_LIVE_WORKTREES, provider)


def on_abandoned_work(
    handler: Callable[[int, str, str], Any],
) -> Callable[[int, str, str], Any]:
    """Register `handler(task_pk, reason, by)` for a task whose work was
    abandoned."""
    return _register(_ABANDONED_WORK, handler)


def requeue_reaped(task: Any) -> bool:
    """Have the handlers re-queue `task`, whose run was reaped; True when one
    did."""
    requeued = False
    for handler in list(_REAPED_RUN):
        requeued = bool(handler(task)) or requeued
    return requeued


def live_worktrees(root: Path) -> Iterator[str]:
    """The worktree paths under `root` the providers know to be live."""
    for provider in list(_LIVE_WORKTREES):
        yield from provider(root)


def abandoned_work(task_pk: int, reason: str, *, by: str) -> None:
    """Tell the handlers that `by` abandoned the work of the task `task_pk`."""
    for handler in list(_ABANDONED_WORK):
        handler(task_pk, reason, by)
