"""Spec 001: "Maximum 5 child agents per parent"; DESIGN: "a task may run up to
5 coding instances in parallel". A sixth coding instance of a task, or of an
issue, is refused until one of the five is terminated."""

from __future__ import annotations

import pytest

from codex.events.models import Event
from codex.fleet.models import AgentInstance, InstanceType
from codex.fleet.models.instance import MAX_PARALLEL_CODING, ParallelLimitReached
from tests.factories import make_repository, make_task
from tests.fleet.factories import make_instance

pytestmark = pytest.mark.django_db


def test_a_task_gets_at_most_five_coding_instances():
    task = make_task(issue_number=None)
    five = [
        make_instance(repository=task.repository, task=task, issue_number=None)
        for _ in range(MAX_PARALLEL_CODING)
    ]
    assert [i.instance_id for i in five] == [f"work-a{n}" for n in range(1, 6)]
    events = Event.objects.count()

    with pytest.raises(ParallelLimitReached, match="already has 5 coding"):
        make_instance(repository=task.repository, task=task, issue_number=None)
    assert AgentInstance.objects.filter(task=task).count() == 5
    assert Event.objects.count() == events  # nothing logged for the refusal

    five[0].perform("terminate", by="user:alice")
    sixth = make_instance(repository=task.repository, task=task, issue_number=None)
    assert sixth.instance_id == "work-a6"


def test_an_issue_gets_at_most_five_coding_instances():
    repository = make_repository()
    for _ in range(MAX_PARALLEL_CODING):
        make_instance(repository=repository, issue_number=42)
    with pytest.raises(ParallelLimitReached, match="issue #42"):
        make_instance(repository=repository, issue_number=42)
    # Another issue, and other instance types, are not limited by it.
    assert make_instance(repository=repository, issue_number=43)
    assert make_instance(InstanceType.REVIEW, repository=repository, issue_number=42)
