"""Spec 004's configured review limits: review.max_iterations (3),
review.auto_abandon_after (5), review.timeout_hours (24)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from codex.configuration.models import Setting
from codex.configuration.registry import InvalidSettingValue
from codex.events.models import Event
from codex.fleet.jobs import enforce_review_limits
from codex.fleet.limits import review_limits
from codex.fleet.models import (
    AgentInstance,
    InstanceRelationship,
    InstanceStatus,
    InstanceType,
)
from codex.fleet.reviews import ReviewLimitReached, spawn_review
from tests.fleet.factories import add_reviews, make_instance

pytestmark = pytest.mark.django_db


def spawn(coding):
    return spawn_review(
        coding, by="agent:coding", worktree_path="/w/review", branch_name="issue-123"
    )


def test_the_spec_defaults():
    limits = review_limits()
    assert (limits.max_iterations, limits.auto_abandon_after, limits.timeout_hours) == (
        3,
        5,
        24,
    )


def test_max_iterations_above_the_databases_5_is_refused(monkeypatch):
    monkeypatch.setenv("CODEX_REVIEW_MAX_ITERATIONS", "9")
    with pytest.raises(InvalidSettingValue, match="CODEX_REVIEW_MAX_ITERATIONS"):
        review_limits()


def test_spawn_review_links_a_new_review_instance_with_the_next_iteration():
    coding = make_instance()
    first = spawn(coding)
    second = spawn(coding)
    assert first.type == InstanceType.REVIEW and first.parent == coding
    assert (first.instance_id, second.instance_id) == ("review-123-a1", "review-123-a2")
    assert list(
        InstanceRelationship.objects.filter(parent=coding).values_list(
            "child", "review_iteration"
        )
    ) == [(first.pk, 1), (second.pk, 2)]
    coding.refresh_from_db()
    assert coding.status == InstanceStatus.WAITING_REVIEW


def test_a_4th_review_is_refused_with_the_default_max_of_3():
    coding = make_instance()
    for _ in range(3):
        spawn(coding)
    reviews = AgentInstance.objects.filter(type=InstanceType.REVIEW).count()
    with pytest.raises(ReviewLimitReached):
        spawn(coding)
    assert AgentInstance.objects.filter(type=InstanceType.REVIEW).count() == reviews
    assert coding.current_review_iteration() == 3


def test_a_configured_max_of_5_allows_5_reviews():
    Setting.objects.put("review.max_iterations", 5, actor="user:alice")
    coding = make_instance()
    for _ in range(5):
        spawn(coding)
    with pytest.raises(ReviewLimitReached):
        spawn(coding)


def age(instance, hours):
    AgentInstance._base_manager.filter(pk=instance.pk).update(
        started_at=timezone.now() - timedelta(hours=hours)
    )


def test_reviews_running_longer_than_24h_are_terminated():
    coding = make_instance()
    stuck, fresh = spawn(coding), make_instance(InstanceType.REVIEW)
    age(stuck, 24.01)
    age(fresh, 23.9)
    done = enforce_review_limits()
    assert done["timed_out"] == [stuck.instance_id]
    stuck.refresh_from_db()
    fresh.refresh_from_db()
    assert (stuck.status, fresh.status) == ("terminated", "started")
    event = Event.objects.filter(subject=f"instance:{stuck.instance_id}").latest("id")
    assert event.reason == "review running for more than 24h"
    assert enforce_review_limits() == {"timed_out": [], "abandoned": []}


def test_coding_agents_with_5_review_iterations_are_abandoned():
    four, five = make_instance(issue_number=4), make_instance(issue_number=5)
    add_reviews(four, 4)
    add_reviews(five, 5)
    assert enforce_review_limits()["abandoned"] == [five.instance_id]
    four.refresh_from_db()
    five.refresh_from_db()
    assert (four.status, five.status) == ("started", "terminated")
