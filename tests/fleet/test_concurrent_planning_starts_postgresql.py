"""Workers starting planning instances on one repository at once (they share
one numbering, and outside a transaction each start is a single statement
with its event): every start succeeds with its own agent number, and each
instance has exactly one start event, which names it."""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from codex.events.models import Event
from codex.fleet.models import AgentInstance, InstanceType
from tests.factories import make_task

pytestmark = [pytest.mark.postgresql, pytest.mark.django_db(transaction=True)]

WORKERS = 6


def test_concurrent_planning_starts_each_get_a_number_and_one_event():
    tasks = [make_task(issue_number=None) for _ in range(WORKERS)]
    repository = tasks[0].repository
    barrier = threading.Barrier(WORKERS)
    failures: list[BaseException] = []

    def worker(task) -> None:
        try:
            barrier.wait()
            AgentInstance.objects.start(
                type=InstanceType.PLANNING,
                repository=repository,
                task=task,
                worktree_path=f"/wt/{task.task_id}",
                branch_name=f"codex/{task.task_id}",
                by="worker:test",
            )
        except BaseException as exc:  # noqa: BLE001 - reported below
            failures.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=worker, args=(task,)) for task in tasks]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert failures == []
    instances = list(AgentInstance.objects.filter(repository=repository))
    assert sorted(i.agent_number for i in instances) == list(range(1, WORKERS + 1))
    for instance in instances:
        [event] = Event.objects.filter(subject=f"instance:{instance.instance_id}")
        assert event.data["instance"] == instance.pk
    # A start that lost its number to another left no event behind.
    assert Event.objects.filter(subject__startswith="instance:").count() == WORKERS
