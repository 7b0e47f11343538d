"""`check_suite` / `check_run` completed: the CI verdict of a task's branch."""

from __future__ import annotations

from django.db import transaction

from codex.core.store import LeaseUnavailable
from codex.core.workers import enqueue_on_commit
from codex.events.models import EventKind
from codex.tasks.models import Phase, Status, Task
from codex.tasks.models.queryset import ADVANCE_JOB
from codex.webhooks.handlers.common import (
    Context,
    Result,
    deferred,
    ignored,
    obj,
    processed,
)

FAILING = frozenset({"failure", "timed_out", "cancelled"})


def handle(context: Context) -> Result:
    """Set the task's ci_passing from a completed check: a failing conclusion
    (failure, timed_out, cancelled) of a suite or a single run means False; a
    suite's success means True. A single run's success is not the whole CI, so
    it changes nothing (the suite's completion follows). Other conclusions
    (neutral, skipped, stale, action_required) change nothing either.

    The write holds the task's lease (one attempt): when a worker holds it the
    delivery is deferred, to be applied later. A verdict about an older commit
    of the branch than the task's last is ignored. In implementation, the task
    is advanced so the phase can move on.
    """
    if context.action != "completed":
        return ignored(f"{context.delivery.event}.{context.action} needs nothing")
    if context.delivery.event == "check_run":
        check = obj(context.payload.get("check_run"))
        suite = obj(check.get("check_suite"))
        head_sha = str(check.get("head_sha") or suite.get("head_sha") or "")
    else:
        check = suite = obj(context.payload.get("check_suite"))
        head_sha = str(suite.get("head_sha") or "")
    branch = str(suite.get("head_branch") or "")
    conclusion = str(check.get("conclusion") or "")
    if conclusion in FAILING:
        passing = False
    elif conclusion == "success" and context.delivery.event == "check_suite":
        passing = True
    else:
        return ignored(f"conclusion {conclusion or 'none'!r} does not decide CI")
    if not branch:
        return ignored("no head branch")
    task = (
        Task.objects.active()
        .filter(repository=context.repository, branch=branch)
        .order_by("-created_at", "-id")
        .first()
    )
    if task is None:
        return ignored(f"no active task on branch {branch!r}")
    commits = [str(sha) for sha in task.commits or []]
    if head_sha and head_sha in commits and commits[-1] != head_sha:
        return ignored(f"the check is about an older commit {head_sha[:12]}")
    if task.ci_passing is passing:
        return processed(f"task {task.task_id} ci_passing already {passing}")
    try:
        task.acquire_lease(context.actor, attempts=1)
    except LeaseUnavailable:
        return deferred(f"task {task.task_id} is busy; CI verdict applied later")
    try:
        with transaction.atomic():
            task.ci_passing = passing
            task.record(
                EventKind.WEBHOOK,
                by=context.actor,
                reason=f"CI {'passing' if passing else 'failing'} on {branch} "
                f"({context.delivery.event} {conclusion})",
                data={
                    "delivery": context.delivery.delivery_id,
                    "head_sha": head_sha,
                    "conclusion": conclusion,
                },
            )
            task.save(release_lease=True)
            if task.status == Status.IN_PROGRESS and task.phase == Phase.IMPLEMENTATION:
                enqueue_on_commit(ADVANCE_JOB, task.task_id)
    finally:
        if task.held_lease:
            task.release_lease()
    return processed(f"task {task.task_id} ci_passing set to {passing}")
