"""On PostgreSQL an idle pusher waits for the `codex_jobs` notification (core
migration 0006) instead of polling five times a second: a job queued, or
handed back, wakes it at once; its own claim does not; the wait ends anyway
after CODEX_QUEUE_IDLE_SECONDS, when jobs held back until a time are due.
Elsewhere it sleeps the poll interval, as before."""

from __future__ import annotations

import threading
import time

import psycopg
import pytest
from django.db import connection
from django_q.models import OrmQ

from codex.core.brokers import ClaimingORM
from codex.core.queue import job_row

pytestmark = pytest.mark.django_db(transaction=True)

IDLE = 30  # far longer than any wake-up below takes


def waited(broker: ClaimingORM) -> float:
    start = time.monotonic()
    broker.wait_for_jobs()
    return time.monotonic() - start


def in_another_session(statement: str, *params) -> None:
    """Run `statement` in a connection of its own, as another process would."""
    with psycopg.connect(**connection.get_connection_params()) as other:
        other.execute(statement, params)
        other.commit()


def after(seconds: float, action) -> threading.Thread:
    thread = threading.Thread(target=lambda: (time.sleep(seconds), action()))
    thread.start()
    return thread


def queue_a_job() -> None:
    row = job_row("codex.tasks.jobs.advance_task", "FEAT-1")
    in_another_session(
        "INSERT INTO django_q_ormq (key, payload, lock) VALUES (%s, %s, now())",
        row.key,
        row.payload,
    )


@pytest.mark.postgresql
def test_a_queued_job_wakes_the_pusher(settings):
    settings.CODEX_QUEUE_IDLE_SECONDS = IDLE
    broker = ClaimingORM()
    broker._listening(connection)  # as after a first poll that found nothing
    thread = after(0.5, queue_a_job)
    assert waited(broker) < IDLE / 2
    thread.join()
    assert broker.dequeue()  # and it takes the job


@pytest.mark.postgresql
def test_a_job_handed_back_wakes_it(settings):
    settings.CODEX_QUEUE_IDLE_SECONDS = IDLE
    broker = ClaimingORM()
    row = job_row("codex.tasks.jobs.advance_task", "FEAT-2")
    row.key = f"{broker._key('a-dead-cluster')}#77"
    row.save()
    broker._listening(connection)  # listening from now on
    thread = after(
        0.5,
        lambda: in_another_session(
            "UPDATE django_q_ormq SET key = %s WHERE id = %s", broker.list_key, row.pk
        ),
    )
    assert waited(broker) < IDLE / 2
    thread.join()


@pytest.mark.postgresql
def test_a_claim_wakes_nobody_and_the_wait_ends_on_its_own(settings):
    settings.CODEX_QUEUE_IDLE_SECONDS = 1
    broker = ClaimingORM()
    broker._listening(connection)
    row = job_row("codex.tasks.jobs.advance_task", "FEAT-3")
    row.save()
    assert waited(broker) < 0.9  # the control: the new job's notification
    assert broker.dequeue()
    # The claim just made (key <queue>@<claim>) sent no notification.
    assert waited(broker) >= 0.9
    assert OrmQ.objects.get(pk=row.pk).key == broker._key(broker.claim)


@pytest.mark.postgresql
def test_it_listens_again_on_a_new_connection(settings):
    settings.CODEX_QUEUE_IDLE_SECONDS = IDLE
    broker = ClaimingORM()
    broker._listening(connection)
    connection.close()  # Django replaces it (a restart, a health check)
    thread = after(0.5, queue_a_job)
    assert waited(broker) < IDLE / 2
    thread.join()


def test_without_postgresql_it_sleeps_the_poll_interval(settings, monkeypatch):
    slept = []
    monkeypatch.setattr("time.sleep", slept.append)
    monkeypatch.setattr(connection, "vendor", "sqlite")
    ClaimingORM().wait_for_jobs()
    assert slept == [0.2]
