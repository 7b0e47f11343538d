from __future__ import annotations

from typing import TYPE_CHECKING

from django.apps import AppConfig

if TYPE_CHECKING:
    from codex.tasks.models import Task


class ClaimsConfig(AppConfig):
    name = "codex.claims"
    label = "claims"
    verbose_name = "Claims, backlog runs and the project board"

    def ready(self) -> None:
        from codex.tasks.hooks import on_task_ended

        # A task that ended settles the issue claim it came from.
        on_task_ended(settle_claims)


def settle_claims(task: Task, *, by: str, reason: str) -> dict[str, int]:
    """The clean-up of a task that ended settles its issue claim
    (IssueClaim.objects.settle_for_ended_task)."""
    from codex.claims.models import IssueClaim

    return {
        "claims": IssueClaim.objects.settle_for_ended_task(task, by=by, reason=reason)
    }
