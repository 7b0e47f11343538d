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
from django.db import connection, transaction
from django_q.models import OrmQ

from codex.core.workers.brokers import ClaimingORM
from codex.core.workers.queue import job_row

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


@pytest.mark.postgresql
def test_the_poll_listens_before_it_looks(settings):
    # A job queued between the look and the wait must end the wait: so the
    # pusher listens before its look, not only when it waits.
    broker = ClaimingORM()
    job_row("codex.tasks.jobs.advance_task", "FEAT-5").save()
    assert broker.dequeue()  # found at once: no wait
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_listening_channels()")
        assert cursor.fetchall() == [("codex_jobs",)]


@pytest.mark.postgresql
def test_notifications_from_a_busy_time_end_one_wait_only(settings):
    settings.CODEX_QUEUE_IDLE_SECONDS = 1
    broker = ClaimingORM()
    broker._listening(connection)
    for _ in range(3):  # queued while the pusher was busy...
        queue_a_job()
        with connection.cursor() as cursor:  # ...running its statements, which
            cursor.execute("SELECT 1")  # take the notifications in
    assert waited(broker) < 0.9
    assert waited(broker) >= 0.9  # the other two did not end this one


@pytest.mark.postgresql
def test_the_trigger_names_no_column_a_migration_may_alter():
    # PostgreSQL refuses to alter the type of a column a trigger names.
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(
                "ALTER TABLE django_q_ormq ALTER COLUMN key TYPE varchar(150)"
            )
        transaction.set_rollback(True)


def test_inside_a_transaction_it_sleeps_the_poll_interval(monkeypatch):
    slept = []
    monkeypatch.setattr("time.sleep", slept.append)
    with transaction.atomic():
        ClaimingORM().wait_for_jobs()
    assert slept == [0.2]


def test_without_postgresql_it_sleeps_the_poll_interval(settings, monkeypatch):
    slept = []
    monkeypatch.setattr("time.sleep", slept.append)
    monkeypatch.setattr(connection, "vendor", "sqlite")
    ClaimingORM().wait_for_jobs()
    assert slept == [0.2]
