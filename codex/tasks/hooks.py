"""What the apps above the pipeline do when a task ends, registered from their
AppConfig.ready() so that the tasks app imports none of them
(docs/architecture.md#layer-debts):

- `on_task_ended(handler)`: `handler(task, *, by, reason)` settles what the
  app holds for a task that completed, failed or was cancelled (the claims
  app: its issue claim) and answers what it settled, counts by name. The
  clean-up job (codex.tasks.jobs.clean_up_task) calls it.

A handler that raises fails the clean-up job, which is retried, as the work it
stands for always did.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from codex.tasks.models import Task

_TASK_ENDED: list[Callable[..., dict[str, int]]] = []


def on_task_ended(
    handler: Callable[..., dict[str, int]],
) -> Callable[..., dict[str, int]]:
    """Register `handler(task, *, by, reason)` for a task that ended."""
    if handler not in _TASK_ENDED:
        _TASK_ENDED.append(handler)
    return handler


def task_ended(task: Task, *, by: str, reason: str) -> dict[str, int]:
    """Have every handler settle what it holds for `task`; what they settled."""
    settled: dict[str, int] = {}
    for handler in list(_TASK_ENDED):
        settled.update(handler(task, by=by, reason=reason))
    return settled
