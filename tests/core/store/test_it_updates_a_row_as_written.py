"""codex.core.store.plain_updates.update_row: one row's UPDATE written out directly
stores what the ORM's UPDATE would (JSON, times, a foreign key by its
column), only where its condition holds, and refuses what needs the
compiler."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db.models import F
from django.utils import timezone

from codex.core.store.plain_updates import update_row
from codex.core.store.side_effects import SideEffect, SideEffectStatus
from codex.fleet.models import AgentRun
from tests.factories import make_task
from tests.fleet.factories import make_instance

pytestmark = pytest.mark.django_db


def started_effect(key: str = "effect:1") -> SideEffect:
    return SideEffect.objects.create(
        key=key, kind="test", status=SideEffectStatus.STARTED
    )


def test_it_stores_what_the_orm_would():
    effect, other = started_effect(), started_effect("effect:2")
    done_at = timezone.now() - timedelta(seconds=5)
    result = {"pr": 7, "title": "O'Brien's \"fix\"", "nested": [1, None]}

    count = update_row(
        SideEffect,
        effect.pk,
        {"status": SideEffectStatus.DONE, "result": result, "done_at": done_at},
    )

    assert count == 1
    effect.refresh_from_db()
    assert (effect.status, effect.result, effect.done_at) == (
        SideEffectStatus.DONE,
        result,
        done_at,
    )
    other.refresh_from_db()
    assert other.status == SideEffectStatus.STARTED


def test_it_sets_a_foreign_key_by_its_column():
    task = make_task()
    run = AgentRun.objects.begin(by="worker:1", session_id="s", task=task)
    instance = make_instance(task=task)
    assert update_row(AgentRun, run.pk, {"instance_id": instance.pk}) == 1
    run.refresh_from_db()
    assert run.instance == instance


def test_it_updates_nothing_where_its_condition_fails():
    task = make_task()
    version = task.version
    stale = update_row(
        type(task),
        task.pk,
        {"lease_holder": "worker:x"},
        condition='"version" = %s',
        condition_params=[version + 1],
        bump_version=True,
    )
    assert stale == 0
    task.refresh_from_db()
    assert (task.lease_holder, task.version) == (None, version)
    assert update_row(
        type(task),
        task.pk,
        {"lease_holder": "worker:x"},
        condition='"version" = %s',
        condition_params=[version],
        bump_version=True,
    )
    task.refresh_from_db()
    assert (task.lease_holder, task.version) == ("worker:x", version + 1)


def test_it_refuses_what_needs_the_compiler():
    effect = started_effect()
    with pytest.raises(TypeError):
        update_row(SideEffect, effect.pk, {"attempts": F("attempts") + 1})
    task = make_task()
    run = AgentRun.objects.begin(by="worker:1", session_id="s", task=task)
    with pytest.raises(TypeError):
        update_row(AgentRun, run.pk, {"instance": make_instance(task=task)})


def test_it_refuses_a_field_that_is_not_a_plain_column():
    task = make_task()
    with pytest.raises(TypeError):  # the reverse side of a relation
        update_row(type(task), task.pk, {"artifacts": None})
