"""Spec 004: "CHECK (review_iteration > 0 AND review_iteration <= 5)", enforced
by the database, and each review iteration taken once per coding agent."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, transaction

from codex.fleet.models import InstanceRelationship, InstanceType, RelationshipType
from tests.fleet.factories import make_instance

pytestmark = pytest.mark.django_db


def link(parent, child, iteration, type_=RelationshipType.SPAWNED_REVIEW):
    return InstanceRelationship.objects.create(
        parent=parent, child=child, relationship_type=type_, review_iteration=iteration
    )


@pytest.fixture
def pair():
    coding = make_instance()
    review = make_instance(InstanceType.REVIEW, repository=coding.repository)
    return coding, review


@pytest.mark.parametrize("iteration", [0, 6])
def test_iterations_outside_1_to_5_are_refused_by_the_database(pair, iteration):
    with pytest.raises(IntegrityError), transaction.atomic():
        link(*pair, iteration)
    assert not InstanceRelationship.objects.exists()


@pytest.mark.parametrize("iteration", [1, 5])
def test_iterations_1_and_5_are_accepted(pair, iteration):
    assert link(*pair, iteration).pk


def test_an_iteration_is_taken_once_per_coding_agent(pair):
    coding, review = pair
    link(coding, review, 1)
    other = make_instance(InstanceType.REVIEW, repository=coding.repository)
    with pytest.raises(IntegrityError), transaction.atomic():
        link(coding, other, 1)


def test_other_relationship_types_do_not_share_review_iterations(pair):
    coding, review = pair
    fork = make_instance(repository=coding.repository)
    link(coding, review, 1)
    assert link(coding, fork, 1, RelationshipType.CREATED_FORK).pk


def test_an_unknown_relationship_type_is_refused(pair):
    with pytest.raises(IntegrityError), transaction.atomic():
        link(*pair, 1, "adopted")
