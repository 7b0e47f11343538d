"""Enqueueing worker jobs: always by id, always after the transaction commits.

A job enqueued inside a transaction that later rolls back would act on rows that
never existed; a job enqueued before commit may run before its rows are visible.
`enqueue_on_commit` is therefore the one way the code base hands work to django-q2.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import transaction


def enqueue_on_commit(func_path: str, *args: Any, **options: Any) -> None:
    """Enqueue `func_path(*args)` on django-q2 once the current transaction commits.

    `args` must be plain values (ids, strings): jobs re-read their rows.
    """

    def _send() -> None:
        from django_q.tasks import async_task

        async_task(func_path, *args, sync=settings.CODEX_RUN_JOBS_INLINE, **options)

    transaction.on_commit(_send)
