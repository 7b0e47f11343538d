"""What the API's task actions do beyond one model method: retry.

No model change: a retried failed task is a new task with the same request,
linked to the old one by events on both and by its idempotency key
`retry:{old_task_id}` (which also makes a second retry return the same new task).
"""

from __future__ import annotations

from django.db import transaction
from django_fsm import TransitionNotAllowed

from codex.events.models import Event, EventKind
from codex.tasks.api.serializers import RETRY_KEY_PREFIX
from codex.tasks.models import Status, Task


def retry_task(task: Task, *, by: str, reason: str = "") -> tuple[Task, bool]:
    """Retry `task`. Returns (the task that runs now, whether it was created).

    - blocked: unblock now, without waiting for the backoff to end;
    - failed: a new task with the same request (created once; asking again
      returns that same new task);
    - anything else: TransitionNotAllowed (terminal states stay terminal).
    LeaseUnavailable and VersionConflict pass through from `perform`.
    """
    if task.status == Status.BLOCKED:
        # Retrying means "now": the backoff guard would otherwise refuse.
        task.blocked_until = None
        return task.perform(
            "unblock", by=by, reason=reason or "retried on request"
        ), False
    if task.status != Status.FAILED:
        raise TransitionNotAllowed(f"a task that is {task.status} cannot retry")
    with transaction.atomic():
        new_task, created = Task.objects.create_from_request(
            repository=task.repository,
            title=task.title,
            description=task.description,
            priority=task.priority,
            acceptance_criteria=task.acceptance_criteria,
            created_by=task.created_by,
            actor=by,
            idempotency_key=f"{RETRY_KEY_PREFIX}{task.task_id}",
            issue_number=task.issue_number,
        )
        if created:
            Event.log(
                EventKind.CONTROL,
                actor=by,
                reason=reason or f"retried as {new_task.task_id}",
                task=task,
                data={"action": "retry", "retried_as": new_task.task_id},
            )
            Event.log(
                EventKind.CONTROL,
                actor=by,
                reason=f"retry of {task.task_id}",
                task=new_task,
                data={"action": "retry", "retry_of": task.task_id},
            )
    return new_task, created
