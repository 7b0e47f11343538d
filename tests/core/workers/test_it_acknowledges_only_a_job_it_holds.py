"""The monitor acknowledges (deletes) a finished job's row only while its
cluster holds it: claimed by the cluster, or started by one of its workers.
A row handed back (queued again) or taken by another cluster is left."""

from __future__ import annotations

import pytest
from django_q.models import OrmQ

from codex.core.workers.brokers import ClaimingORM
from codex.core.workers.queue import job_row

pytestmark = pytest.mark.django_db


def row_with_key(key: str) -> OrmQ:
    row = job_row("codex.tasks.jobs.advance_task", "FEAT-1")
    row.key = key
    row.save()
    return row


def test_it_deletes_only_the_rows_its_cluster_holds():
    broker, other = ClaimingORM(), ClaimingORM()
    mine = broker._key(broker.claim)
    claimed = row_with_key(mine)
    started = row_with_key(f"{mine}#4242")
    handed_back = row_with_key(broker.list_key)
    theirs = row_with_key(other._key(other.claim))

    for row in (claimed, started, handed_back, theirs):
        broker.acknowledge(row.pk)

    left = set(OrmQ.objects.values_list("pk", flat=True))
    assert left == {handed_back.pk, theirs.pk}
