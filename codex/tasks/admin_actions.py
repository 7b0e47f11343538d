"""The task list's actions in the operator console: retry, pause, resume,
cancel (each now, or at the end of the step a worker is in), and breaking a
lease. Mixed into codex.tasks.admin.TaskAdmin."""

from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django_fsm import TransitionNotAllowed

from codex.core.store import LeaseUnavailable, VersionConflict
from codex.tasks.api.actions import retry_task
from codex.tasks.models import Task


def operator(request: HttpRequest) -> str:
    return f"user:{request.user.get_username()}"


CONTROL_VERBS = {"pause": "Paused", "resume": "Resumed", "cancel": "Cancelled"}
CONTROL_NOUNS = {"pause": "pause", "resume": "resumption", "cancel": "cancellation"}


def refused(task: Task, action: str) -> str:
    """Why `action` is not allowed on `task` now, in the status machine's
    terms (docs/domain/tasks.md#task-status)."""
    status = task.get_status_display().lower()
    if action == "pause" and task.status == "pending":
        return (
            "a pending task cannot be paused: only a task in progress pauses "
            "(docs/domain/tasks.md); cancel it, or pause it once it has started."
        )
    if action == "resume":
        return f"a {status} task cannot be resumed: only a paused one resumes."
    verb = {"pause": "paused", "cancel": "cancelled"}[action]
    return f"a {status} task cannot be {verb}."


class TaskListActions:
    """The actions of TaskAdmin's list (a ModelAdmin mixin)."""

    def _report(self, request: HttpRequest, done: list, skipped: list, verb: str):
        if done:
            self.message_user(
                request,
                f"{verb} {len(done)} task(s): {', '.join(done)}.",
                messages.SUCCESS,
            )
        for line in skipped:
            self.message_user(request, line, messages.WARNING)
        if not done and not skipped:
            self.message_user(request, "No task selected.", messages.WARNING)

    @admin.action(description="Retry now (blocked: unblock; failed: new task)")
    def retry_tasks(self, request: HttpRequest, queryset: QuerySet[Task]) -> None:
        done: list[str] = []
        skipped: list[str] = []
        for task in queryset.order_by("pk"):
            try:
                result, created = retry_task(task, by=operator(request))
            except TransitionNotAllowed:
                skipped.append(
                    f"{task.task_id}: a {task.get_status_display().lower()} "
                    "task cannot be retried."
                )
            except (LeaseUnavailable, VersionConflict) as exc:
                skipped.append(f"{task.task_id}: not retried: {exc}.")
            else:
                if result.pk == task.pk:
                    done.append(f"{task.task_id} unblocked")
                elif created:
                    done.append(f"{task.task_id} retried as {result.task_id}")
                else:
                    done.append(f"{task.task_id} already retried as {result.task_id}")
        self._report(request, done, skipped, "Retried")

    def _control(
        self, request: HttpRequest, queryset: QuerySet[Task], action: str
    ) -> None:
        """Pause, resume or cancel each task now, or at the end of the step a
        worker is in (Task.request_control); what was not done, with why."""
        done: list[str] = []
        skipped: list[str] = []
        for task in queryset.order_by("pk"):
            try:
                _, deferred = task.request_control(action, by=operator(request))
            except TransitionNotAllowed:
                skipped.append(f"{task.task_id}: {refused(task, action)}")
            except (LeaseUnavailable, VersionConflict) as exc:
                skipped.append(f"{task.task_id}: not done ({action}): {exc}.")
            else:
                if deferred:
                    skipped.append(
                        f"{task.task_id}: a worker is in a step; the "
                        f"{CONTROL_NOUNS[action]} will happen when that step ends."
                    )
                else:
                    done.append(task.task_id)
        self._report(request, done, skipped, CONTROL_VERBS[action])

    @admin.action(description="Pause (at the end of a running step)")
    def pause_tasks(self, request: HttpRequest, queryset: QuerySet[Task]) -> None:
        self._control(request, queryset, "pause")

    @admin.action(description="Resume paused tasks")
    def resume_tasks(self, request: HttpRequest, queryset: QuerySet[Task]) -> None:
        self._control(request, queryset, "resume")

    @admin.action(description="Cancel (at the end of a running step)")
    def cancel_tasks(self, request: HttpRequest, queryset: QuerySet[Task]) -> None:
        self._control(request, queryset, "cancel")

    @admin.action(description="Force-break the lease (recorded)")
    def force_break_lease(self, request: HttpRequest, queryset: QuerySet[Task]) -> None:
        broken = 0
        for task in queryset.filter(lease_holder__isnull=False):
            if task.break_lease(
                by=operator(request), reason="force-broken by an operator"
            ):
                broken += 1
        self.message_user(request, f"Broke {broken} lease(s).")
