"""Spec 004 instance ids: "work-123-a1", "review-123-a1", "planning-a1"."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from codex.fleet.models import (
    AgentInstance,
    InstanceType,
    new_instance_id,
    parse_instance_id,
)
from tests.factories import make_repository
from tests.fleet.factories import make_instance

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("type_", "issue", "agent", "expected"),
    [
        (InstanceType.CODING, 123, 1, "work-123-a1"),
        (InstanceType.REVIEW, 123, 1, "review-123-a1"),
        (InstanceType.PLANNING, None, 1, "planning-a1"),
        (InstanceType.CODING, 123, 2, "work-123-a2"),
    ],
)
def test_ids_follow_the_spec_patterns(type_, issue, agent, expected):
    assert new_instance_id(type_, issue, agent) == expected
    assert parse_instance_id(expected) == (type_, issue, agent)


@pytest.mark.parametrize(
    "bad", ["work-123", "work-0-a1", "work-123-a0", "planning-123-a1", "x-1-a1", ""]
)
def test_other_ids_are_refused(bad):
    with pytest.raises(ValueError):
        parse_instance_id(bad)


@pytest.mark.parametrize(
    ("type_", "expected"),
    [(InstanceType.CODING, "work-a1"), (InstanceType.REVIEW, "review-a1")],
)
def test_work_without_an_issue_is_numbered_per_repository(type_, expected):
    """A task from the web form or the API has no GitHub issue."""
    assert new_instance_id(type_, None, 1) == expected
    assert parse_instance_id(expected) == (type_, None, 1)
    repository = make_repository()
    first = make_instance(type_, repository=repository, issue_number=None)
    second = make_instance(type_, repository=repository, issue_number=None)
    assert (first.instance_id, second.instance_id) == (
        expected,
        expected.replace("a1", "a2"),
    )


def test_an_issue_number_must_be_positive():
    with pytest.raises(ValueError):
        new_instance_id(InstanceType.CODING, 0, 1)


def test_parallel_coding_agents_on_one_issue_get_a1_a2_a3():
    repository = make_repository()
    ids = [make_instance(repository=repository).instance_id for _ in range(3)]
    assert ids == ["work-123-a1", "work-123-a2", "work-123-a3"]
    assert [i.agent_number for i in AgentInstance.objects.order_by("agent_number")] == [
        1,
        2,
        3,
    ]


def test_numbers_are_counted_per_repository_and_issue():
    first, second = make_repository(), make_repository()
    make_instance(repository=first)
    assert make_instance(repository=second).instance_id == "work-123-a1"
    assert make_instance(repository=first, issue_number=7).instance_id == "work-7-a1"
    assert make_instance(InstanceType.PLANNING, repository=first).instance_id == (
        "planning-a1"
    )


def test_an_id_that_does_not_match_type_issue_and_number_fails_validation():
    instance = make_instance()
    instance.instance_id = "work-999-a1"
    with pytest.raises(ValidationError, match="does not match"):
        instance.full_clean(exclude=["status"])


def test_the_database_refuses_a_prefix_of_another_type():
    instance = make_instance()
    with pytest.raises(IntegrityError), transaction.atomic():
        AgentInstance._base_manager.filter(pk=instance.pk).update(
            instance_id="review-123-a1"
        )


def test_the_same_id_twice_in_one_repository_is_refused():
    instance = make_instance()
    duplicate = AgentInstance(
        instance_id=instance.instance_id,
        type=instance.type,
        repository=instance.repository,
        issue_number=123,
        worktree_path="/w",
        branch_name="b",
    )
    with pytest.raises(IntegrityError), transaction.atomic():
        duplicate.save()
