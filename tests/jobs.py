"""What tests read of enqueued jobs.

A job reaches django-q two ways: `async_task` (after a commit; tests record
those calls with an `enqueued` fixture) or, with the ORM broker, as a row
written by the change itself (codex.core.workers.queue.job_row: a transition, a step,
a new task). `queued_jobs` reads the second kind from the broker's table.
"""

from __future__ import annotations


def queued_jobs() -> list[tuple[str, tuple]]:
    """(func, args) of every job row the ORM broker holds, oldest first."""
    from django_q.models import OrmQ
    from django_q.signing import SignedPackage

    packages = [SignedPackage.loads(row.payload) for row in OrmQ.objects.order_by("id")]
    return [(package["func"], tuple(package["args"])) for package in packages]


def queued_calls() -> list[tuple]:
    """The same as (func, *args) tuples, the shape `enqueued` fixtures record."""
    return [(func, *args) for func, args in queued_jobs()]


def route_enqueues(monkeypatch, broker):
    """Send every enqueue of the test process to `broker` (a django-q broker
    object), whatever the test settings' broker is: async_task's, and, for a
    broker that is not the ORM one, also the jobs a change would otherwise
    write as rows of its own (codex.core.workers.queue.job_row), as in a process
    configured for that broker. Returns `broker`."""
    from django_q.brokers.orm import ORM
    from django_q.conf import Conf

    monkeypatch.setattr("django_q.tasks.get_broker", lambda *args, **kw: broker)
    if not isinstance(broker, ORM):
        monkeypatch.setattr(Conf, "ORM", None)
    return broker
