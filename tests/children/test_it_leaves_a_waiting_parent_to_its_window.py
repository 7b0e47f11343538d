"""Stuck-task recovery leaves alone a parent waiting for its children and a
child at release waiting for the parent's decision: they wait on the
completion window, not on a lost step (docs/children.md). A parent whose
fan-out never got its children spawned is recovered like any task."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from codex.children.models import Child
from codex.tasks.recovery import recover_stuck_tasks, stuck_tasks
from tests.children.factories import make_fan_out
from tests.factories import make_task, put_in_state

pytestmark = pytest.mark.django_db

LONG_AGO = timedelta(hours=3)


def waiting_since_long_ago(task, phase: str = "planning"):
    return put_in_state(
        task,
        status="in_progress",
        phase=phase,
        phase_entered_at=timezone.now() - LONG_AGO,
    )


def test_a_parent_awaiting_its_children_is_not_stuck():
    fan_out = make_fan_out(2)
    parent = waiting_since_long_ago(fan_out.parent)
    assert not stuck_tasks(timezone.now()).filter(pk=parent.pk).exists()
    assert recover_stuck_tasks() == 0


def test_a_child_held_at_release_is_not_stuck_but_one_at_work_is():
    fan_out = make_fan_out(2)
    at_release = waiting_since_long_ago(make_task(), phase="release")
    at_work = waiting_since_long_ago(make_task(), phase="implementation")
    Child.objects.create(fan_out=fan_out, child_id="C1", task=at_release)
    Child.objects.create(fan_out=fan_out, child_id="C2", task=at_work)
    stuck = set(stuck_tasks(timezone.now()).values_list("pk", flat=True))
    assert at_work.pk in stuck
    assert at_release.pk not in stuck
    assert fan_out.parent_id not in stuck


def test_a_parent_whose_spawning_stopped_half_way_is_recovered(
    django_capture_on_commit_callbacks,
):
    fan_out = make_fan_out(2, open_window=False)  # created, no children yet
    waiting_since_long_ago(fan_out.parent)
    ordinary = waiting_since_long_ago(make_task(), phase="implementation")
    with django_capture_on_commit_callbacks(execute=False):
        assert recover_stuck_tasks() == 2
    ordinary.refresh_from_db()
    assert ordinary.phase_entered_at > timezone.now() - timedelta(minutes=1)
