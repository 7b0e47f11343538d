"""When a task's progress comment was last edited, and whether an edit of it
waits in the queue (docs/gates.md)."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db import connections, models, router
from django.utils import timezone

# On PostgreSQL each of ProgressEdit's steps is one statement sent as written
# (every change of every task requests an edit): the lock and the request
# together, the row's previous values read beside its new ones (a row locked
# FOR UPDATE is read as last committed, as the ORM's SELECT ... FOR UPDATE
# read it).
REQUEST_SQL = (
    'UPDATE "tasks_progressedit" AS edit SET "due_at" = CASE '
    'WHEN prev."due_at" IS NULL OR prev."due_at" < %s '
    'THEN GREATEST(%s, COALESCE(prev."edited_at" + %s, %s)) '
    'ELSE prev."due_at" END '
    'FROM (SELECT "task_id", "due_at", "edited_at" FROM "tasks_progressedit" '
    'WHERE "task_id" = %s FOR UPDATE) AS prev '
    'WHERE edit."task_id" = prev."task_id" RETURNING prev."due_at", edit."due_at"'
)
TAKE_SQL = (
    'UPDATE "tasks_progressedit" SET "due_at" = NULL WHERE "task_id" = '
    '(SELECT "id" FROM "tasks_task" WHERE "task_id" = %s) '
    'RETURNING "edited_at", "body_sha256"'
)
EDITED_SQL = (
    'INSERT INTO "tasks_progressedit" ("task_id", "due_at", "edited_at", '
    '"body_sha256") VALUES (%s, NULL, %s, %s) ON CONFLICT ("task_id") DO UPDATE '
    'SET "edited_at" = EXCLUDED."edited_at", "body_sha256" = EXCLUDED."body_sha256"'
)


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
        if _on_postgresql():
            return cls._request_in_one_statement(task_pk)
        rows = cls.objects.filter(task_id=task_pk)
        fields = ("due_at", "edited_at")
        state = rows.select_for_update().values_list(*fields).first()
        if state is None:
            cls._first_change(task_pk)
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
    def _request_in_one_statement(cls, task_pk: int) -> datetime | None:
        # Read before the lock is waited for (the ORM's way read it after):
        # a due time already past only means the edit runs at once.
        now = timezone.now()
        params = [now - _retry(), now, timedelta(seconds=min_seconds()), now, task_pk]
        with connections[router.db_for_write(cls)].cursor() as cursor:
            cursor.execute(REQUEST_SQL, params)
            state = cursor.fetchone()
            if state is None:
                cls._first_change(task_pk)
                cursor.execute(REQUEST_SQL, params)
                state = cursor.fetchone()
        was_due, due = state
        return None if was_due is not None and not _lost(was_due, now) else due

    @classmethod
    def _first_change(cls, task_pk: int) -> None:
        # The row, made by whichever of two concurrent changes comes first,
        # then locked like any other time.
        cls.objects.bulk_create([cls(task_id=task_pk)], ignore_conflicts=True)

    @classmethod
    def take(cls, task_id: str) -> tuple[datetime | None, str]:
        """The queued job, before it reads the task: the edit is no longer
        queued (the next change queues another). Returns when the comment was
        last edited and the digest of its text."""
        if _on_postgresql():
            with connections[router.db_for_write(cls)].cursor() as cursor:
                cursor.execute(TAKE_SQL, [task_id])
                state = cursor.fetchone()
        else:
            rows = cls.objects.filter(task__task_id=task_id)
            rows.update(due_at=None)
            state = rows.values_list("edited_at", "body_sha256").first()
        return tuple(state) if state is not None else (None, "")

    @classmethod
    def edited(cls, task_pk: int, body_sha256: str) -> None:
        """Record an edit (or the first post) of the comment, made just now."""
        if _on_postgresql():
            with connections[router.db_for_write(cls)].cursor() as cursor:
                cursor.execute(EDITED_SQL, [task_pk, timezone.now(), body_sha256])
            return
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


def _on_postgresql() -> bool:
    return connections[router.db_for_write(ProgressEdit)].vendor == "postgresql"


def _lost(due_at: datetime, now: datetime) -> bool:
    """Whether a queued edit due at `due_at` should have run long ago: a job
    not taken within its retry time after it was due is not coming."""
    return now > due_at + _retry()


def _retry() -> timedelta:
    return timedelta(seconds=float(settings.Q_CLUSTER.get("retry", 360)))


def min_seconds() -> float:
    """The least time between two edits of one task's progress comment."""
    return float(getattr(settings, "CODEX_PROGRESS_MIN_SECONDS", 5))
