"""What the children app needs of the pipeline above it (the tasks app), which
it may not import (docs/architecture.md#layer-debts):

- `PipelineTask`: what it reads of a task (a parent, a child), for its
  annotations;
- `register_task_creation(create)`: the tasks app's
  `create(**request)`, registered from its ready(), creates a task from a
  request (or returns the one created under the same idempotency key) and
  answers (task, created); `create_task` calls it for each child.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol


class PipelineTask(Protocol):
    """A task of the pipeline (codex.tasks.models.Task), as the children app
    reads it."""

    pk: Any
    task_id: str
    title: str
    description: str
    phase: str
    phase_progress: dict[str, Any]
    priority: str
    created_by: str
    issue_number: int | None
    pr_url: str
    repository: Any


_CREATE_TASK: list[Callable[..., tuple[Any, bool]]] = []  # the one


def register_task_creation(create: Callable[..., tuple[Any, bool]]) -> None:
    """Have the children's tasks created by `create(**request)`."""
    _CREATE_TASK[:] = [create]


def create_task(**request: Any) -> tuple[PipelineTask, bool]:
    """A task created from `request` by the pipeline, or the one created under
    the same idempotency key: (task, created)."""
    if not _CREATE_TASK:
        raise RuntimeError("the tasks app has not registered its task creation")
    return _CREATE_TASK[0](**request)
