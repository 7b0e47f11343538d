"""codex.core.workers.queue.job_row writes the ORM broker's row itself, so that a
transition can put it in its own statement. Its package must be the one
django-q's async_task signs, or a worker would run something else or nothing.
"""

from __future__ import annotations

from uuid import UUID, uuid4

import pytest
from django_q.brokers import get_broker
from django_q.conf import Conf
from django_q.humanhash import humanize
from django_q.models import OrmQ
from django_q.signals import pre_enqueue
from django_q.signing import SignedPackage
from django_q.tasks import async_task

from codex.core.workers import queue
from codex.core.workers.queue import job_row

pytestmark = pytest.mark.django_db

JOB = "codex.tasks.jobs.advance_task"
# Different in every package by design.
PER_CALL = {"id", "name", "started"}


def package(row: OrmQ) -> dict:
    return SignedPackage.loads(row.payload)


def test_the_row_carries_the_package_async_task_would_send():
    async_task(JOB, "FEAT-1", sync=False)
    sent = OrmQ.objects.get()
    ours = job_row(JOB, "FEAT-1")

    theirs_package, our_package = package(sent), package(ours)
    assert our_package.keys() == theirs_package.keys()
    for key in our_package.keys() - PER_CALL:
        assert our_package[key] == theirs_package[key], key
    assert ours.key == sent.key == get_broker().list_key
    assert our_package["func"] == JOB and our_package["args"] == ("FEAT-1",)
    assert our_package["id"] != theirs_package["id"]


def test_the_broker_hands_a_written_row_to_a_worker():
    OrmQ.objects.all().delete()
    job_row(JOB, "FEAT-2").save()
    [(_, payload)] = get_broker().dequeue()
    assert SignedPackage.loads(payload)["args"] == ("FEAT-2",)


def test_pre_enqueue_receivers_see_the_package():
    seen = []

    def receiver(sender, task, **kwargs):
        seen.append(task["func"])

    pre_enqueue.connect(receiver)
    try:
        job_row(JOB, "FEAT-3")
    finally:
        pre_enqueue.disconnect(receiver)
    assert seen == [JOB]


def test_no_row_when_jobs_do_not_go_through_this_database(settings, monkeypatch):
    assert job_row(JOB, "x", using="other") is None
    settings.CODEX_RUN_JOBS_INLINE = True
    assert job_row(JOB, "x") is None
    settings.CODEX_RUN_JOBS_INLINE = False
    monkeypatch.setattr(Conf, "ORM", None)  # Redis
    assert job_row(JOB, "x") is None


def test_a_jobs_name_is_the_one_django_q_gives_its_id(monkeypatch):
    # The name is django-q's humanhash of the id, worked out from its bytes.
    ids = iter([UUID(int=0), UUID(int=2**128 - 1), *(uuid4() for _ in range(300))])
    monkeypatch.setattr(queue.uuid, "uuid4", lambda: next(ids))
    for _ in range(302):
        name, job_id = queue.job_name_and_id()
        assert name == humanize(job_id) and len(job_id) == 32
    monkeypatch.undo()
    row = package(job_row(JOB, "FEAT-4"))
    assert row["name"] == humanize(row["id"])
