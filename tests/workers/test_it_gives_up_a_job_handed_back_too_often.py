"""The redelivery limit, in the broker (fast; the live test with a step that
really kills its worker is tests/workers/live/test_it_gives_up_a_job_that_keeps
_killing_its_worker.py): a started job whose worker died goes back to the queue
with its count, CODEX_JOB_REDELIVERIES times; the next time it is dropped, the
job is recorded as failed and its task blocked with the reason. Jobs handed
back for another reason (a stop, a dead cluster's buffer) are not counted."""

from __future__ import annotations

import pytest
from django_q.models import OrmQ
from django_q.models import Task as JobResult
from django_q.signing import SignedPackage
from django_q.tasks import async_task

from codex.core.workers.brokers import REDELIVERIES, ClaimingORM
from codex.tasks.models import Status
from tests.factories import make_task, put_in_state

pytestmark = pytest.mark.django_db

PID = 4242


def take_and_start(broker: ClaimingORM) -> int:
    """What a cluster does with the next job: take it, a worker starts it."""
    [(ack_id, _)] = broker.dequeue()
    assert broker.start_claim(ack_id, PID)
    return ack_id


def count_of(row: OrmQ) -> int:
    return SignedPackage.loads(row.payload).get(REDELIVERIES, 0)


def test_a_job_whose_worker_keeps_dying_is_given_up_and_its_task_blocked(settings):
    settings.CODEX_JOB_REDELIVERIES = 2
    task = put_in_state(make_task(), status=Status.IN_PROGRESS, phase="planning")
    OrmQ.objects.all().delete()
    broker = ClaimingORM()
    async_task("codex.tasks.jobs.advance_task", task.task_id, broker=broker)

    for expected in (1, 2):
        take_and_start(broker)
        assert broker.hand_back(broker.claim, pids={PID}, counted=True) == 1
        assert count_of(OrmQ.objects.get()) == expected

    take_and_start(broker)
    assert broker.hand_back(broker.claim, pids={PID}, counted=True) == 0

    assert not OrmQ.objects.exists()
    task.refresh_from_db()
    assert task.status == Status.BLOCKED
    assert "keeps killing its worker" in task.blocked_reason
    assert task.blocked_until is None
    failed = JobResult.objects.get()
    assert failed.success is False and failed.args == (task.task_id,)


def test_a_job_handed_back_by_a_stop_is_not_counted(settings):
    settings.CODEX_JOB_REDELIVERIES = 0
    OrmQ.objects.all().delete()
    broker = ClaimingORM()
    async_task("codex.core.jobs.nothing", broker=broker)

    take_and_start(broker)
    assert broker.hand_back(broker.claim, pids={PID}) == 1

    assert count_of(OrmQ.objects.get()) == 0
    assert not JobResult.objects.exists()
