"""The task queryset: creating a task from a request (ids, fingerprints,
idempotency keys) and the request and identity fields no update may change."""

from __future__ import annotations

import functools
import hashlib
import json
import secrets
import string
from contextlib import nullcontext
from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.db import IntegrityError, models, transaction
from django.utils import timezone

from codex.core.store import VersionedQuerySet, hot_row
from codex.events.models import EventKind
from codex.tasks.models.choices import TERMINAL_STATUSES, CreatedBy, Priority

if TYPE_CHECKING:
    from codex.tasks.models.task import Task

TASK_ID_ALPHABET = string.ascii_lowercase + string.digits
TASK_ID_RANDOM_LENGTH = 6
REQUEST_FIELDS = ("title", "description", "priority", "acceptance_criteria")
# Identity is as immutable as the request.
IMMUTABLE_FIELDS = (
    "task_id",
    "created_by",
    "repository_id",
    "created_at",
    *REQUEST_FIELDS,
)
ADVANCE_JOB = "codex.tasks.jobs.advance_task"


def new_task_id(today: datetime | None = None) -> str:
    """FEAT-{YYYYMMDD}-{random6} (docs/domain/tasks.md#task-id): the six
    characters are the digits of one uniform draw in base 36, one read of the
    system's random source rather than six."""
    day = (today or timezone.now()).strftime("%Y%m%d")
    number = secrets.randbelow(len(TASK_ID_ALPHABET) ** TASK_ID_RANDOM_LENGTH)
    suffix = ""
    for _ in range(TASK_ID_RANDOM_LENGTH):
        number, digit = divmod(number, len(TASK_ID_ALPHABET))
        suffix += TASK_ID_ALPHABET[digit]
    return f"FEAT-{day}-{suffix}"


@functools.cache
def _not_validated_at_creation(model: type[Task]) -> frozenset[str]:
    """The fields a creation does not validate: all but the request's."""
    validated = (*REQUEST_FIELDS, "created_by")
    return frozenset(f.name for f in model._meta.fields if f.name not in validated)


def request_fingerprint(request: dict[str, Any]) -> str:
    """A stable hash of a creation request, to tell replays from key reuse."""
    return hashlib.sha256(
        json.dumps(request, sort_keys=True, default=str).encode()
    ).hexdigest()


class TaskQuerySet(VersionedQuerySet):
    protected_update_fields = frozenset({"status", "phase", *IMMUTABLE_FIELDS})

    def active(self) -> TaskQuerySet:
        return self.exclude(status__in=TERMINAL_STATUSES)

    def held_for_a_person(self) -> TaskQuerySet:
        """Tasks that wait for a person without an escalation, oldest first
        (docs/domain/tasks.md#inbox): blocked with no retry time (nothing
        retries them until a person unblocks them, #retries) and paused
        (nothing resumes them but a person)."""
        return self.filter(
            models.Q(status="blocked", blocked_until__isnull=True)
            | models.Q(status="paused")
        ).order_by("phase_entered_at", "id")

    @hot_row
    def with_repository(self, task_id: str) -> TaskQuerySet:
        """The task `task_id` with its repository, or None (every step of
        every task starts here). task_id is unique: no ORDER BY."""
        return self.select_related("repository").filter(task_id=task_id).order_by()[:1]

    def create_from_request(
        self,
        *,
        repository,
        title: str,
        description: str = "",
        priority: str = Priority.MEDIUM,
        acceptance_criteria: str = "",
        created_by: str = CreatedBy.API,
        actor: str = "",
        idempotency_key: str | None = None,
        issue_number: int | None = None,
        requested_by=None,
        requester_login: str = "",
        plan_approval_required: bool = False,
    ) -> tuple[Task, bool]:
        """Create a task (and enqueue its first step), or return the one created
        earlier with the same idempotency key. Returns (task, created).

        Raises IdempotencyMismatch when the key was used for another request.
        `requested_by` is the user who asked (none for GitHub issues).
        """
        request = {
            "repository": repository.url,
            "title": title,
            "description": description,
            "priority": priority,
            "acceptance_criteria": acceptance_criteria,
        }
        if issue_number is not None:
            request["issue_number"] = issue_number
        fingerprint = request_fingerprint(request)
        if idempotency_key:
            existing = self.filter(idempotency_key=idempotency_key).first()
            if existing is not None:
                return existing.check_replay(fingerprint), False
        # Every field at its default, then the request: given keyword
        # arguments, Model.__init__ raises and catches a KeyError for each of
        # the 35 fields a request leaves at their default.
        task = self.model()
        task.repository = repository
        task.title = title
        task.description = description
        task.priority = priority
        task.acceptance_criteria = acceptance_criteria
        task.created_by = created_by
        task.idempotency_key = idempotency_key or None
        task.request_fingerprint = fingerprint
        task.issue_number = issue_number
        task.requested_by = requested_by
        task.requester_login = requester_login
        task.plan_approval_required = plan_approval_required
        # Only the request is validated here: protected state fields refuse
        # full_clean's re-assignment (django-fsm's protected FSMField).
        task.clean_fields(exclude=_not_validated_at_creation(self.model))
        connection = transaction.get_connection(self.db)
        for _ in range(5):
            task.task_id = new_task_id()
            task.record(
                EventKind.CREATED,
                by=actor or f"intake:{created_by}",
                reason="task created",
                target=task.status,
                data={"idempotency_key": idempotency_key} if idempotency_key else {},
            )
            task.enqueue_with_save(ADVANCE_JOB, task.task_id)
            # Inside a caller's transaction a savepoint, so that a taken id or
            # key can be tried again; outside one the save is one statement
            # (PostgreSQL, see save_with_rows) or a transaction of its own.
            retry_point = (
                transaction.atomic(using=self.db)
                if connection.in_atomic_block
                else nullcontext()
            )
            try:
                with retry_point:
                    task.save(using=self.db)
                return task, True
            except IntegrityError:
                task.pk = None
                task._state.adding = True
                if idempotency_key:
                    existing = self.filter(idempotency_key=idempotency_key).first()
                    if (
                        existing is not None
                    ):  # a concurrent request with the same key won
                        return existing.check_replay(fingerprint), False
        raise IntegrityError("could not allocate a unique task id")
