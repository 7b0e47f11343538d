"""The monitor acknowledges a job without checking its connection first (the
result was just saved on it), except that a job whose success keeps no result
(the progress comment's edits) saved nothing: a connection killed while idle
is then found by the acknowledgement, which reconnects and deletes the row
instead of killing the monitor (codex.core.workers.brokers.ClaimingORM)."""

from __future__ import annotations

import psycopg
import pytest
from django.db import connection
from django_q.models import OrmQ

from codex.core.workers.brokers import ClaimingORM
from codex.core.workers.queue import job_row

pytestmark = [pytest.mark.postgresql, pytest.mark.django_db(transaction=True)]


def kill(backend_pid: int) -> None:
    """Terminate a PostgreSQL backend from another connection, as a restart
    or an idle-connection reaper would."""
    params = connection.get_connection_params()
    with psycopg.connect(**params, autocommit=True) as other:
        other.execute("SELECT pg_terminate_backend(%s)", [backend_pid])


def test_a_job_is_acknowledged_on_a_connection_killed_while_idle():
    broker = ClaimingORM()
    row = job_row("codex.tasks.progress.update_progress_comment", "FEAT-1")
    row.key = f"{broker._key(broker.claim)}#4242"  # taken by a worker of ours
    row.save()
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        [backend] = cursor.fetchone()
    kill(backend)
    broker.acknowledge(row.pk)
    assert not OrmQ.objects.filter(pk=row.pk).exists()
