"""Task creation, spec 002 §2.1/§2.2 and §3.5 "Idempotent Operations":
"Create task | Yes | Check existence first, return existing task_id"."""

from __future__ import annotations

import re

import pytest
from django.core.exceptions import ValidationError

from codex.events.models import EventKind
from codex.tasks.models import IdempotencyMismatch, Task
from tests.factories import make_repository

pytestmark = pytest.mark.django_db

TASK_ID = re.compile(r"^FEAT-\d{8}-[a-z0-9]{6}$")  # §2.2


def create(repository, **overrides):
    request = {
        "title": "Add SSO login",
        "description": "As an admin I want SSO.",
        "priority": "high",
        "acceptance_criteria": "- SAML works",
        "idempotency_key": "k",
    }
    request.update(overrides)
    return Task.objects.create_from_request(repository=repository, **request)


def test_replay_with_the_same_key_returns_the_same_task():
    repository = make_repository()
    first, created = create(repository)
    second, created_again = create(repository)

    assert created is True
    assert created_again is False
    assert second.pk == first.pk
    assert second.task_id == first.task_id
    assert Task.objects.count() == 1
    assert first.events.filter(kind=EventKind.CREATED).count() == 1


@pytest.mark.parametrize(
    "change",
    [
        {"title": "Add OAuth login"},
        {"description": "different"},
        {"priority": "low"},
        {"acceptance_criteria": "- OIDC works"},
    ],
    ids=lambda change: next(iter(change)),
)
def test_same_key_with_a_different_body_raises(change):
    repository = make_repository()
    original, _ = create(repository)

    with pytest.raises(IdempotencyMismatch) as error:
        create(repository, **change)

    assert error.value.task.pk == original.pk
    assert original.task_id in str(error.value)
    assert Task.objects.count() == 1


def test_same_key_for_another_repository_raises():
    create(make_repository())
    with pytest.raises(IdempotencyMismatch):
        create(make_repository())
    assert Task.objects.count() == 1


def test_different_keys_create_different_tasks():
    repository = make_repository()
    first, _ = create(repository, idempotency_key="k1")
    second, created = create(repository, idempotency_key="k2")
    assert created is True
    assert first.pk != second.pk
    assert first.task_id != second.task_id


def test_without_a_key_every_request_creates_a_task():
    repository = make_repository()
    first, _ = create(repository, idempotency_key=None)
    second, created = create(repository, idempotency_key=None)
    assert created is True
    assert first.pk != second.pk


def test_new_task_has_a_spec_shaped_id_and_initial_state():
    task, _ = create(make_repository())
    assert TASK_ID.match(task.task_id), task.task_id
    assert task.task_id[5:13] == task.created_at.strftime("%Y%m%d")
    row = Task.objects.get(pk=task.pk)
    assert (row.status, row.phase, row.version) == ("pending", "intake", 1)
    assert (row.verification_cycles, row.verification_max_cycles) == (0, 3)
    assert (row.review_cycles, row.review_max_cycles) == (0, 2)


def test_task_ids_are_unique_across_many_tasks():
    repository = make_repository()
    ids = {create(repository, idempotency_key=None)[0].task_id for _ in range(30)}
    assert len(ids) == 30
    assert all(TASK_ID.match(task_id) for task_id in ids)


def test_title_of_200_characters_is_accepted():
    task, _ = create(make_repository(), title="x" * 200)
    assert len(Task.objects.get(pk=task.pk).title) == 200


def test_title_over_200_characters_raises_validation_error():
    with pytest.raises(ValidationError) as error:
        create(make_repository(), title="x" * 201)
    assert "title" in error.value.message_dict
    assert Task.objects.count() == 0


def test_unknown_priority_raises_validation_error():
    with pytest.raises(ValidationError) as error:
        create(make_repository(), priority="urgent")
    assert "priority" in error.value.message_dict
    assert Task.objects.count() == 0
