"""PrebuiltFieldsMixin (codex.core.api.serializers) represents a serializer of
read-only scalar and method fields straight from its built fields: for every
kind of task the API answers with, the answer is DRF's own, key for key and in
the same order, and a serializer it cannot read so is left to DRF."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from django.utils import timezone
from rest_framework import serializers

from codex.core.api.serializers import PrebuiltFieldsMixin
from codex.tasks.api.serializers import TaskDetailSerializer, TaskSerializer
from codex.tasks.models import Status
from tests.factories import make_task, put_in_state, waiting_for_plan_approval

pytestmark = pytest.mark.django_db


def as_drf_represents(serializer: serializers.Serializer, instance) -> dict:
    """DRF's own representation: every field bound and read by DRF."""
    return super(PrebuiltFieldsMixin, serializer).to_representation(instance)


def tasks_of_every_kind():
    now = timezone.now()
    yield make_task(title="Fresh")
    yield put_in_state(
        make_task(),
        Status.IN_PROGRESS,
        "implementation",
        lease_holder="worker-1",
        lease_expires_at=now + timedelta(minutes=5),
        current_task=2,
        total_tasks=5,
        branch="codex/feat-1",
    )
    yield put_in_state(
        make_task(),
        Status.BLOCKED,
        "verification",
        blocked_reason="rate limited",
        blocked_until=now + timedelta(seconds=45),
        retry_count=2,
    )
    yield put_in_state(
        make_task(),
        Status.COMPLETED,
        "release",
        finished_at=now,
        pr_url="https://github.com/acme/repo/pull/7",
        errors=[{"phase": "review"}],
    )
    yield waiting_for_plan_approval(make_task())
    yield make_task(idempotency_key="retry:FEAT-20260101-abcdef")


@pytest.mark.parametrize("serializer_class", [TaskSerializer, TaskDetailSerializer])
def test_every_task_is_answered_as_drf_answers_it(serializer_class):
    for task in tasks_of_every_kind():
        answer = serializer_class(task).data
        expected = as_drf_represents(serializer_class(task), task)
        assert answer == expected
        assert list(answer) == list(expected)


@pytest.mark.parametrize("zone", ["UTC", "Europe/Paris", "Asia/Kolkata"])
def test_times_are_answered_in_the_current_time_zone_as_drf_answers_them(zone):
    task = put_in_state(
        make_task(),
        Status.BLOCKED,
        "verification",
        blocked_reason="wait",
        blocked_until=timezone.now() + timedelta(seconds=45),
    )
    with timezone.override(zone):
        answer = TaskDetailSerializer(task).data
        assert answer == as_drf_represents(TaskDetailSerializer(task), task)
    if zone == "UTC":
        assert answer["blocked_until"].endswith("Z")
    else:
        assert answer["blocked_until"][-6:] in {"+01:00", "+05:30"}


class Times(PrebuiltFieldsMixin, serializers.Serializer):
    at = serializers.DateTimeField(read_only=True)
    day = serializers.DateTimeField(read_only=True, format="%Y-%m-%d")
    # A zone of its own, whatever the current one.
    tokyo = serializers.DateTimeField(
        read_only=True, default_timezone=ZoneInfo("Asia/Tokyo")
    )


@pytest.mark.parametrize(
    "value",
    [
        datetime(2026, 11, 28, 12, 30, tzinfo=UTC),
        datetime(2026, 11, 28, 12, 30, 15, 123456, tzinfo=UTC),
        datetime(2026, 11, 28, 12, 30),  # naive: DRF makes it aware
        "2026-11-28T12:30:00Z",  # text: DRF gives it back
    ],
)
def test_any_time_value_is_answered_as_drf_answers_it(value):
    instance = Named(at=value, day=value, tokyo=value)
    with timezone.override("America/New_York"):
        assert Times(instance).data == as_drf_represents(Times(instance), instance)


def test_a_list_of_tasks_is_answered_as_drf_answers_it():
    tasks = list(tasks_of_every_kind())
    answer = TaskSerializer(tasks, many=True).data
    assert answer == [as_drf_represents(TaskSerializer(t), t) for t in tasks]


def test_no_field_is_copied_or_bound_to_answer(monkeypatch):
    task = make_task()
    assert TaskDetailSerializer(task).data  # built once for the class

    def copied(self):
        raise AssertionError("a field was copied to answer")

    monkeypatch.setattr(PrebuiltFieldsMixin, "get_fields", copied)
    assert TaskDetailSerializer(task).data["task_id"] == task.task_id


class WithAList(PrebuiltFieldsMixin, serializers.Serializer):
    name = serializers.CharField(read_only=True)
    tags = serializers.ListField(child=serializers.CharField(), read_only=True)


class Named:
    def __init__(self, **values):
        self.__dict__.update(values)


def test_a_serializer_of_a_field_holding_fields_is_left_to_drf():
    instance = Named(name="x", tags=[1, "b"])
    assert WithAList(instance).data == {"name": "x", "tags": ["1", "b"]}
    assert WithAList._readers == []


class Plain(PrebuiltFieldsMixin, serializers.Serializer):
    name = serializers.CharField(read_only=True)
    size = serializers.IntegerField(read_only=True)


def test_what_drf_reads_in_its_own_way_is_left_to_drf():
    # A mapping is read by key, a missing attribute of a read-only field is
    # skipped, a callable is called: all DRF's.
    assert Plain({"name": "a", "size": "3"}).data == {"name": "a", "size": 3}
    assert Plain(Named(name="a")).data == {"name": "a"}
    assert Plain(Named(name=lambda: "called", size=1)).data == {
        "name": "called",
        "size": 1,
    }
    assert Plain(Named(name=None, size=2)).data == {"name": None, "size": 2}


def test_the_time_zone_is_asked_once_per_answer(monkeypatch):
    # DRF asks for it at every time value; an answer asks once.
    task = put_in_state(
        make_task(), Status.COMPLETED, "release", finished_at=timezone.now()
    )
    asked = []
    current = timezone.get_current_timezone

    def counted():
        asked.append(1)
        return current()

    monkeypatch.setattr(timezone, "get_current_timezone", counted)
    answer = TaskDetailSerializer(task).data
    assert answer["created_at"] and answer["updated_at"] and answer["finished_at"]
    assert len(asked) == 1
