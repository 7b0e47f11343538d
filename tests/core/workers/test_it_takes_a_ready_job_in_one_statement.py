"""The ORM broker's pusher takes a job for its cluster (the row's key then
names the cluster's claim). It takes only ready rows (queued, their hold-back
time passed), the oldest first, and never one another cluster took; on
PostgreSQL it does so in one statement (it runs for every job), and two
clusters taking at once from other processes' connections never take the
same job."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import connection, connections
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from django_q.conf import Conf
from django_q.models import OrmQ
from django_q.signing import SignedPackage

from codex.core.workers.brokers import ClaimingORM
from codex.core.workers.queue import job_row

JOB = "codex.tasks.jobs.advance_task"


def queue(task_id: str, *, ready_in: float = -1) -> OrmQ:
    row = job_row(JOB, task_id)
    row.lock = timezone.now() + timedelta(seconds=ready_in)
    row.save()
    return row


def args_of(taken) -> list[str]:
    return [SignedPackage.loads(payload)["args"][0] for _, payload in taken]


@pytest.mark.django_db
def test_it_takes_the_oldest_ready_job_and_claims_it(settings):
    OrmQ.objects.all().delete()
    queue("FEAT-HELD", ready_in=600)  # held back: not ready yet
    first, second = queue("FEAT-1"), queue("FEAT-2")
    other = ClaimingORM()
    other_claimed = queue("FEAT-OTHER")
    OrmQ.objects.filter(pk=other_claimed.pk).update(key=other._key(other.claim))
    broker = ClaimingORM()

    taken = broker.dequeue()

    assert args_of(taken) == ["FEAT-1"]
    assert taken[0][0] == first.pk
    row = OrmQ.objects.get(pk=first.pk)
    assert row.key == broker._key(broker.claim)
    assert row.lock > timezone.now() + timedelta(seconds=Conf.RETRY - 60)
    assert args_of(broker.dequeue()) == ["FEAT-2"]
    assert OrmQ.objects.get(pk=second.pk).key == broker._key(broker.claim)


@pytest.mark.postgresql
@pytest.mark.django_db
def test_it_takes_a_job_with_one_statement():
    OrmQ.objects.all().delete()
    queue("FEAT-1")
    broker = ClaimingORM()
    broker.dequeue()  # the connection's health check and LISTEN come first
    queue("FEAT-2")
    with CaptureQueriesContext(connection) as queries:
        assert args_of(broker.dequeue()) == ["FEAT-2"]
    statements = [q["sql"] for q in queries if q["sql"] != "SELECT 1"]
    assert len(statements) == 1, statements


@pytest.mark.postgresql
@pytest.mark.django_db(transaction=True)
def test_clusters_taking_at_once_never_take_the_same_job():
    OrmQ.objects.all().delete()
    queued = [queue(f"FEAT-{n}").pk for n in range(60)]
    taken: dict[int, list[int]] = {}
    start = threading.Barrier(4)

    def cluster(n: int) -> None:
        broker = ClaimingORM()
        mine = taken.setdefault(n, [])
        try:
            start.wait()
            while OrmQ.objects.filter(key=broker.list_key).exists():
                mine.extend(pk for pk, _ in broker.dequeue() or [])
        finally:
            connections.close_all()

    threads = [threading.Thread(target=cluster, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    everything = [pk for pks in taken.values() for pk in pks]
    assert sorted(everything) == sorted(queued)  # each once, none lost
    assert all(pks == sorted(pks) for pks in taken.values())  # oldest first
