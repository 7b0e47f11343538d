"""What the worker runtime runs for the apps, registered by each app from its
AppConfig.ready(), so that the core names no app (docs/architecture.md#layers):

- `on_dead_worker(handler)`: `handler(holder, reason)` frees what a worker
  that died held (its leases, its running agent runs);
- `on_given_up_job(handler)`: `handler(package, reason)` records a job whose
  worker died running it too often, and what it would have advanced;
- `on_warm_up(handler)`: `handler()` imports what the workers would import
  at their first job, in the sentinel before it forks them.

The handlers run in the order they were registered; one that raises is
logged and the others still run.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

logger = logging.getLogger(__name__)

_DEAD_WORKER: list[Callable[[str, str], Any]] = []
_GIVEN_UP_JOB: list[Callable[[dict, str], Any]] = []
_WARM_UP: list[Callable[[], Any]] = []


def _register(handlers: list, handler: Callable) -> Callable:
    if handler not in handlers:
        handlers.append(handler)
    return handler


def on_dead_worker(handler: Callable[[str, str], Any]) -> Callable[[str, str], Any]:
    """Register `handler(holder, reason)` for a worker that died."""
    return _register(_DEAD_WORKER, handler)


def on_given_up_job(handler: Callable[[dict, str], Any]) -> Callable[[dict, str], Any]:
    """Register `handler(package, reason)` for a job given up."""
    return _register(_GIVEN_UP_JOB, handler)


def on_warm_up(handler: Callable[[], Any]) -> Callable[[], Any]:
    """Register `handler()` to run in a sentinel before its workers fork."""
    return _register(_WARM_UP, handler)


def _run(handlers: list, what: str, *arguments: Any) -> None:
    for handler in list(handlers):
        try:
            handler(*arguments)
        except Exception:  # noqa: BLE001 - the next app's handler still runs
            logger.exception("%s: %r failed", what, handler)


def dead_worker(holder: str, reason: str) -> None:
    """Tell every app that the worker `holder` died."""
    _run(_DEAD_WORKER, "dead worker", holder, reason)


def given_up_job(package: dict, reason: str) -> None:
    """Tell every app that a job was given up."""
    _run(_GIVEN_UP_JOB, "given-up job", package, reason)


def warm_up() -> None:
    """Run every app's warm-up (a failure only costs the workers time)."""
    _run(_WARM_UP, "warm-up")
