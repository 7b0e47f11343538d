"""Spec 001 §1: CREATED → CHILDREN_SPAWNED → AWAITING_COMPLETIONS → ANALYZING →
COMPLETE, every transition under the lease and in the event log."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django_fsm import TransitionNotAllowed

from codex.children.models import FanOut
from codex.core.store.refusals import LeaseRequired, LeaseUnavailable
from codex.events.models import Event
from tests.children.factories import make_fan_out, post

pytestmark = pytest.mark.django_db


def test_the_happy_path_walks_the_specs_states_in_order():
    fan_out = make_fan_out(1, open_window=False)
    fan_out.perform("spawn_children", by="worker:1")
    assert fan_out.state == "children_spawned"
    assert fan_out.spawned_at is not None
    fan_out.perform("open_window", by="worker:1")
    assert fan_out.state == "awaiting_completions"
    assert fan_out.deadline == fan_out.window_opened_at + timedelta(minutes=10)
    post(fan_out, "🤖 Child C1 complete: PR #10 ready for review")
    fan_out.refresh_from_db()
    assert fan_out.state == "complete"
    transitions = [
        (e.source, e.target, e.actor)
        for e in Event.objects.filter(task=fan_out.parent, kind="transition").in_order()
    ]
    assert transitions == [
        ("created", "children_spawned", "worker:1"),
        ("children_spawned", "awaiting_completions", "worker:1"),
        ("awaiting_completions", "analyzing", "webhook:test"),
        ("analyzing", "complete", "webhook:test"),
    ]
    assert all(
        e.subject == f"fanout:{fan_out.pk}"
        for e in Event.objects.filter(task=fan_out.parent, kind="transition")
    )


def test_a_transition_out_of_order_is_refused_and_changes_nothing():
    fan_out = make_fan_out(2, open_window=False)
    with pytest.raises(TransitionNotAllowed):
        fan_out.perform("open_window", by="t")
    fan_out.refresh_from_db()
    assert (fan_out.state, fan_out.lease_holder) == ("created", None)
    with pytest.raises(TransitionNotAllowed):
        fan_out.perform("save", by="t")


def test_the_state_cannot_change_without_the_lease():
    fan_out = make_fan_out(2, open_window=False)
    fan_out.spawn_children(by="t")
    with pytest.raises(LeaseRequired):
        fan_out.save()
    with pytest.raises(LeaseRequired):
        FanOut.objects.filter(pk=fan_out.pk).update(state="complete")


def test_a_lease_held_elsewhere_blocks_the_transition():
    fan_out = make_fan_out(2, open_window=False)
    other = FanOut.objects.get(pk=fan_out.pk)
    other.acquire_lease("worker:other")
    with pytest.raises(LeaseUnavailable):
        fan_out.perform("spawn_children", by="worker:me")
    fan_out.refresh_from_db()
    assert fan_out.state == "created"


def test_count_triggering_needs_every_expected_child():
    fan_out = make_fan_out(2)
    post(fan_out, "🤖 Child C1 complete: PR #10")
    with pytest.raises(TransitionNotAllowed):
        fan_out.perform("trigger_on_count", by="t")
