"""Enqueueing worker jobs: always by id, never visible before the transaction commits.

A job enqueued inside a transaction that later rolls back would act on rows that
never existed; a job enqueued before commit may run before its rows are visible.
`enqueue_on_commit` is therefore the way the code base hands work to django-q2;
`job_row` is the ORM broker's row of a job, for a change that writes it with
itself when the broker is the same database (a transactional outbox: see
Task.enqueue_with_save); `broker_after_commit` is a cheaper ORM broker for a hot
on-commit enqueue.
"""

from __future__ import annotations

import functools
import uuid
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, transaction
from django.utils import timezone

# The ORM broker Codex's clusters use (codex.core.workers.brokers): a job row it reads
# is one django-q's own ORM broker would write.
ORM_BROKER_CLASS = "codex.core.workers.brokers.ClaimingORM"


def job_handed_back() -> bool:
    """Whether the job this worker is about to run was handed back to the
    queue before it started (its cluster is stopping, or was presumed dead):
    another worker runs it, so a job that would only repeat work returns."""
    from codex.core.workers.brokers import job_handed_back as handed_back

    return handed_back()


def enqueue_on_commit(func_path: str, *args: Any, **options: Any) -> None:
    """Enqueue `func_path(*args)` on django-q2 once the current transaction commits.

    `args` must be plain values (ids, strings): jobs re-read their rows.
    """

    def _send() -> None:
        from django_q.tasks import async_task

        async_task(func_path, *args, sync=settings.CODEX_RUN_JOBS_INLINE, **options)

    transaction.on_commit(_send)


@functools.cache
def broker_after_commit() -> Any:
    """A django-q broker to pass as `enqueue_on_commit(..., broker=...)` on a hot
    path, made once per process; None (django-q's default) unless the broker is
    the ORM one.

    django-q builds a new broker for every async_task, and its ORM broker calls
    close_old_connections() on the way in (twice): that is for the cluster's
    long-lived broker thread, but it also marks the request's connection for a
    health check, a `SELECT 1` round trip before the OrmQ INSERT. An on-commit
    callback runs right after a commit on that very connection, so this one
    skips it.
    """
    from django_q.brokers import get_broker
    from django_q.brokers.orm import ORM
    from django_q.conf import Conf
    from django_q.models import OrmQ

    broker = get_broker()
    if not isinstance(broker, ORM):
        return None

    class AfterCommitORM(type(broker)):
        @staticmethod
        def get_connection(list_key: str | None = None) -> Any:
            return OrmQ.objects.using(Conf.ORM)

    return AfterCommitORM(list_key=broker.list_key)


def job_name_and_id() -> tuple[str, str]:
    """A new job's id (a uuid4's hex) and its four-word name, the pair
    django-q's humanhash.uuid() gives: each word is the XOR of one quarter
    of the id's 16 bytes, as humanize() computes it one hex pair at a time
    (a quarter of a job row's CPU)."""
    from django_q.humanhash import DEFAULT_HASHER

    job_id = uuid.uuid4()
    raw = job_id.bytes
    words = DEFAULT_HASHER.wordlist
    name = "-".join(
        words[raw[i] ^ raw[i + 1] ^ raw[i + 2] ^ raw[i + 3]] for i in (0, 4, 8, 12)
    )
    return name, job_id.hex


def job_row(
    func_path: str,
    *args: Any,
    using: str = DEFAULT_DB_ALIAS,
    not_before: datetime | None = None,
) -> Any:
    """The ORM broker's job row for `func_path(*args)`, unsaved, for a caller
    to write inside its own transaction or statement; None when jobs do not go
    through the ORM broker on `using` (Redis, or jobs run inline). With
    `not_before`, no cluster takes it before then: the broker takes only rows
    whose lock has passed.

    The package is the one django-q's async_task signs (id and name, func,
    args, the cluster's cached and ack_failure defaults, started; the
    pre_enqueue signal sees it), without what async_task adds around it for
    each call: a new broker, its connection check and a log line. The signal
    fires when the row is built, so also for one whose change is then refused
    and never written.
    """
    from django_q.conf import Conf

    if settings.CODEX_RUN_JOBS_INLINE or using != Conf.ORM:
        return None
    if Conf.BROKER_CLASS and Conf.BROKER_CLASS != ORM_BROKER_CLASS:
        return None
    from django_q.models import OrmQ
    from django_q.signals import pre_enqueue
    from django_q.signing import SignedPackage

    name, task_id = job_name_and_id()
    package: dict[str, Any] = {
        "id": task_id,
        "name": name,
        "func": func_path,
        "args": args,
        "sync": False,
    }
    if Conf.CACHED:
        package["cached"] = Conf.CACHED
    if Conf.ACK_FAILURES:
        package["ack_failure"] = Conf.ACK_FAILURES
    package["kwargs"] = {}
    package["started"] = timezone.now()
    pre_enqueue.send(sender="django_q", task=package)
    return OrmQ(
        key=Conf.CLUSTER_NAME,
        payload=SignedPackage.dumps(package),
        lock=not_before or timezone.now(),
    )


def enqueue_not_before(
    func_path: str,
    *args: Any,
    not_before: datetime,
    using: str = DEFAULT_DB_ALIAS,
) -> None:
    """Enqueue `func_path(*args)`, inside the current transaction, for no
    worker to start before `not_before`. With the ORM broker on `using` its
    row is written now, with the transaction's other rows, and stays hidden
    until then. Otherwise (Redis, or jobs run inline) it is sent on commit and
    runs at once: the job itself must wait for its moment."""
    row = job_row(func_path, *args, using=using, not_before=not_before)
    if row is None:
        enqueue_on_commit(func_path, *args)
        return
    row.save(using=using)
