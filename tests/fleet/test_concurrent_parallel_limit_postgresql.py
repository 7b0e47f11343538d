"""Two workers starting a coding instance for a task that has four: exactly one
takes the fifth place, the other is refused (the repository row is locked
while counting)."""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from codex.fleet.models import AgentInstance, InstanceType
from codex.fleet.models.instance import ParallelLimitReached
from tests.factories import make_task
from tests.fleet.factories import make_instance

pytestmark = [pytest.mark.postgresql, pytest.mark.django_db(transaction=True)]


def test_only_one_of_two_concurrent_starts_takes_the_fifth_place():
    task = make_task(issue_number=None)
    for _ in range(4):
        make_instance(repository=task.repository, task=task, issue_number=None)
    barrier = threading.Barrier(2)
    outcomes: list[str] = []

    def worker(n: int) -> None:
        try:
            barrier.wait()
            # Different issues: their agent numbers cannot collide, so only the
            # lock keeps the sixth out.
            make_instance(repository=task.repository, task=task, issue_number=100 + n)
            outcomes.append("started")
        except ParallelLimitReached:
            outcomes.append("refused")
        finally:
            connection.close()

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["refused", "started"]
    assert (
        AgentInstance.objects.filter(task=task, type=InstanceType.CODING).count() == 5
    )
