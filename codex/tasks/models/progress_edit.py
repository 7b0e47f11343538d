"""When a task's progress comment was last edited, and whether an edit of it
waits in the queue (docs/gates.md)."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db import models
from django.utils import timezone


class ProgressEdit(models.Model):
    """The progress comment's schedule for one task: at most one edit job is
    queued at a time (`due_at`, when it is due; None when none is queued),
    CODEX_PROGRESS_MIN_SECONDS after the last edit (`edited_at`), and every
    change made while it waits is carried by it.

    A change takes this row's lock inside its own transaction (`request`);
    the queued job clears `due_at` before it reads the task (`take`), and
    that UPDATE waits for any change still holding the lock. So a change that
    found an edit queued is always read by it, and one that did not queues
    the next. A queued edit whose job never ran (`due_at` long past) does
    not silence the comment: the next change queues another. `body_sha256`
    is the text last posted: an edit that would not change it is skipped.
    """

    task = models.OneToOneField(
        "tasks.Task",
        on_delete=models.CASCADE,
        primary_key=True,
        related_name="+",
    )
    # When the queued edit is due (None: none is queued). Past it by a job's
    # retry time, the job is taken to be lost (a Redis restart, a job given
    # up before it ran) and the next change queues another.
    due_at = models.DateTimeField(null=True, blank=True)
    edited_at = models.DateTimeField(null=True, blank=True)
    body_sha256 = models.CharField(max_length=64, blank=True)

    def __str__(self) -> str:
        return f"progress edit of task {self.task_id}"

    @classmethod
    def request(cls, task_pk: int) -> datetime | None:
        """Inside the transaction of a change of the task: None when an edit is
        queued already (it reads the task after this change commits); else
        the moment the edit to queue now is due, and the row says queued."""
        rows = cls.objects.filter(task_id=task_pk)
        fields = ("due_at", "edited_at")
        state = rows.select_for_update().values_list(*fields).first()
        if state is None:
            # The first change of the task: the row, made by whichever of two
            # concurrent changes comes first, then locked like any other time.
            cls.objects.bulk_create([cls(task_id=task_pk)], ignore_conflicts=True)
            state = rows.select_for_update().values_list(*fields).first()
        due_at, edited_at = state
        now = timezone.now()
        if due_at is not None and not _lost(due_at, now):
            return None
        due = now
        if edited_at is not None:
            due = max(now, edited_at + timedelta(seconds=min_seconds()))
        rows.update(due_at=due)
        return due

    @classmethod
    def take(cls, task_id: str) -> tuple[datetime | None, str]:
        """The queued job, before it reads the task: the edit is no longer
        queued (the next change queues another). Returns when the comment was
        last edited and the digest of its text."""
        rows = cls.objects.filter(task__task_id=task_id)
        rows.update(due_at=None)
        state = rows.values_list("edited_at", "body_sha256").first()
        return state if state is not None else (None, "")

    @classmethod
    def edited(cls, task_pk: int, body_sha256: str) -> None:
        """Record an edit (or the first post) of the comment, made just now."""
        rows = cls.objects.filter(task_id=task_pk)
        if not rows.update(edited_at=timezone.now(), body_sha256=body_sha256):
            cls.objects.bulk_create(
                [
                    cls(
                        task_id=task_pk,
                        edited_at=timezone.now(),
                        body_sha256=body_sha256,
                    )
                ],
                ignore_conflicts=True,
            )


def _lost(due_at: datetime, now: datetime) -> bool:
    """Whether a queued edit due at `due_at` should have run long ago: a job
    not taken within its retry time after it was due is not coming."""
    retry = float(settings.Q_CLUSTER.get("retry", 360))
    return now > due_at + timedelta(seconds=retry)


def min_seconds() -> float:
    """The least time between two edits of one task's progress comment."""
    return float(getattr(settings, "CODEX_PROGRESS_MIN_SECONDS", 5))
