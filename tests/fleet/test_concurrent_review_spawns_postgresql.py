"""Two workers spawning a review for the same coding agent at the same moment:
exactly one gets the next review iteration (version check and the unique
(parent, review_iteration) constraint); the other writes nothing."""

from __future__ import annotations

import threading

import pytest
from django.db import IntegrityError, connection

from codex.core.store.refusals import VersionConflict
from codex.fleet.models import AgentInstance, InstanceRelationship, InstanceType
from codex.fleet.reviews import spawn_review
from tests.fleet.factories import make_instance

pytestmark = [pytest.mark.postgresql, pytest.mark.django_db(transaction=True)]


def test_only_one_of_two_concurrent_spawns_takes_the_iteration():
    coding = make_instance()
    copies = [AgentInstance.objects.get(pk=coding.pk) for _ in range(2)]
    barrier = threading.Barrier(2)
    outcomes: list[str] = []

    def worker(copy: AgentInstance, n: int) -> None:
        try:
            barrier.wait()
            spawn_review(
                copy, by=f"worker:{n}", worktree_path=f"/w/{n}", branch_name="b"
            )
            outcomes.append("spawned")
        except (VersionConflict, IntegrityError):
            outcomes.append("refused")
        finally:
            connection.close()

    threads = [
        threading.Thread(target=worker, args=(copy, n)) for n, copy in enumerate(copies)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["refused", "spawned"]
    assert list(
        InstanceRelationship.objects.filter(parent=coding).values_list(
            "review_iteration", flat=True
        )
    ) == [1]
    assert AgentInstance.objects.filter(type=InstanceType.REVIEW).count() == 1
