"""Spec 004's configured limits: ('review.max_iterations', '3') "Maximum review
loops per coding agent" and ('review.auto_abandon_after', '5') "Auto-abandon
after 5 failed reviews". One coding instance never gets past 3 reviews, so
the failed reviews are counted over the work it shares with its forks: the
fifth failed review abandons the work with the default limits."""

from __future__ import annotations

import pytest

from codex.configuration.models import Setting
from codex.fleet.jobs import enforce_review_limits
from codex.fleet.models import InstanceStatus
from codex.fleet.reviews import (
    ReviewLimitReached,
    failed_reviews,
    record_review_verdict,
    spawn_review,
)
from codex.tasks.models import Escalation
from tests.factories import make_task, put_in_state
from tests.fleet.factories import make_instance

pytestmark = pytest.mark.django_db


def failed_review(coding) -> None:
    review = spawn_review(
        coding, by="agent:coding", worktree_path="/w/r", branch_name="issue-7"
    )
    record_review_verdict(review, approved=False)


def test_the_fifth_failed_review_of_a_task_abandons_it_with_the_defaults():
    task = put_in_state(make_task(issue_number=7), status="in_progress")
    first = make_instance(repository=task.repository, issue_number=7, task=task)
    for _ in range(3):
        failed_review(first)
    with pytest.raises(ReviewLimitReached):
        failed_review(first)  # review.max_iterations: 3 per coding instance
    first.perform("terminate", by="agent:coding", reason="out of reviews")
    fork = make_instance(repository=task.repository, issue_number=7, task=task)
    failed_review(fork)
    assert enforce_review_limits()["abandoned"] == []

    failed_review(fork)
    assert failed_reviews(fork) == 5

    assert enforce_review_limits()["abandoned"] == [fork.instance_id]
    fork.refresh_from_db()
    assert fork.status == InstanceStatus.TERMINATED
    task.refresh_from_db()
    assert task.status == "escalated"
    escalation = Escalation.objects.get(task=task)
    assert "5 reviews requested changes (limit 5)" in escalation.detail


def test_approved_reviews_do_not_count_and_the_limit_is_configurable():
    Setting.objects.put("review.auto_abandon_after", 3, actor="user:alice")
    task = make_task(issue_number=8)
    first = make_instance(repository=task.repository, issue_number=8, task=task)
    review = spawn_review(
        first, by="agent:coding", worktree_path="/w/r", branch_name="issue-8"
    )
    record_review_verdict(review, approved=True)
    failed_review(first)
    fork = make_instance(repository=task.repository, issue_number=8, task=task)
    failed_review(fork)
    assert enforce_review_limits()["abandoned"] == []  # 4 reviews, 2 failed

    failed_review(fork)

    assert sorted(enforce_review_limits()["abandoned"]) == [
        first.instance_id,
        fork.instance_id,
    ]


def test_a_person_who_resumes_abandoned_work_gives_its_fork_a_fresh_count():
    Setting.objects.put("review.auto_abandon_after", 2, actor="user:alice")
    task = put_in_state(make_task(issue_number=9), status="in_progress")
    first = make_instance(repository=task.repository, issue_number=9, task=task)
    failed_review(first)
    failed_review(first)
    assert enforce_review_limits()["abandoned"] == [first.instance_id]
    task.refresh_from_db()
    task.resolve_escalation(
        task.escalations.get(), decision="resume", by="user:bob", resolution="retry"
    )

    fork = make_instance(repository=task.repository, issue_number=9, task=task)

    assert enforce_review_limits()["abandoned"] == []
    assert failed_reviews(fork) == 0
    failed_review(fork)
    failed_review(fork)
    assert enforce_review_limits()["abandoned"] == [fork.instance_id]
