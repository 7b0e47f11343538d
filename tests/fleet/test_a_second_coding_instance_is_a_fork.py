"""Spec 004 `instance_relationships`: relationship_type "created_fork", and
"Multiple Coding Agents per GitHub issue (parallel development)": a coding
instance started where another one already worked is linked to it."""

from __future__ import annotations

import pytest

from codex.fleet.models import InstanceRelationship, InstanceType, RelationshipType
from tests.factories import make_repository, make_task
from tests.fleet.factories import make_instance, put_instance_in

pytestmark = pytest.mark.django_db


def forks() -> list[tuple[str, str]]:
    return [
        (link.parent.instance_id, link.child.instance_id)
        for link in InstanceRelationship.objects.filter(
            relationship_type=RelationshipType.CREATED_FORK
        )
    ]


def test_the_second_and_third_coding_instances_of_an_issue_fork_the_newest():
    repository = make_repository()
    make_instance(repository=repository, issue_number=123)
    make_instance(repository=repository, issue_number=123)
    third = make_instance(repository=repository, issue_number=123)

    assert forks() == [("work-123-a1", "work-123-a2"), ("work-123-a2", "work-123-a3")]
    (link,) = InstanceRelationship.objects.filter(child=third)
    assert link.metadata["issue_number"] == 123


def test_a_task_forks_from_its_own_terminated_coding_instance():
    task = make_task(issue_number=9)
    first = make_instance(repository=task.repository, issue_number=9, task=task)
    put_instance_in(first, "terminated")

    make_instance(repository=task.repository, issue_number=9, task=task)

    assert forks() == [("work-9-a1", "work-9-a2")]
    link = InstanceRelationship.objects.get()
    assert link.metadata == {
        "task": task.task_id,
        "issue_number": 9,
        "parent_status": "terminated",
    }


def test_the_first_coding_instance_and_other_types_are_no_forks():
    repository = make_repository()
    make_instance(repository=repository, issue_number=1)
    make_instance(repository=repository, issue_number=2)
    make_instance(InstanceType.PLANNING, repository=repository)
    make_instance(InstanceType.PLANNING, repository=repository)

    assert forks() == []
