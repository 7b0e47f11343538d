"""The review-limits job runs every half hour over every running coding
instance: what it costs must not grow with how many are running (it asked
each instance for its failed reviews in turn, a query apiece)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from codex.configuration.models import Setting
from codex.fleet.jobs import enforce_review_limits
from codex.fleet.reviews import record_review_verdict, spawn_review
from tests.factories import make_task, put_in_state
from tests.fleet.factories import make_instance

pytestmark = pytest.mark.django_db


def running_work(count: int, start: int) -> None:
    """`count` tasks in progress, each with a coding instance one failed
    review short of nothing (below the default limit of 5)."""
    for number in range(start, start + count):
        task = put_in_state(make_task(issue_number=number), status="in_progress")
        coding = make_instance(
            repository=task.repository, issue_number=number, task=task
        )
        review = spawn_review(
            coding, by="agent:coding", worktree_path="/w/r", branch_name="b"
        )
        record_review_verdict(review, approved=False)


def queries_of_a_run() -> int:
    with CaptureQueriesContext(connection) as captured:
        done = enforce_review_limits()
    assert done == {"timed_out": [], "abandoned": []}
    return len(captured.captured_queries)


def test_it_costs_the_same_queries_for_2_or_12_running_instances():
    running_work(2, start=100)
    enforce_review_limits()  # the settings' first reads
    with_two = queries_of_a_run()
    running_work(10, start=200)
    assert queries_of_a_run() == with_two


def failed_reviews_of(coding, count: int) -> None:
    for _ in range(count):
        review = spawn_review(
            coding, by="agent:coding", worktree_path="/w/r", branch_name="b"
        )
        record_review_verdict(review, approved=False)


def test_it_still_counts_an_issue_s_work_and_a_lone_instance_s():
    Setting.objects.put("review.auto_abandon_after", 3, actor="user:alice")
    first = make_instance(issue_number=9)
    fork = make_instance(repository=first.repository, issue_number=9)
    lone = make_instance(issue_number=None)
    below = make_instance(issue_number=None)
    failed_reviews_of(first, 2)
    failed_reviews_of(fork, 1)
    failed_reviews_of(lone, 3)
    failed_reviews_of(below, 2)
    # The issue's work (first and fork: 3 together) and the lone instance's
    # (3 of its own) are over the limit: the whole of each is abandoned, and
    # its failed reviews are settled by it (nothing is left to count again).
    assert sorted(enforce_review_limits()["abandoned"]) == sorted(
        [first.instance_id, fork.instance_id, lone.instance_id]
    )
    assert enforce_review_limits()["abandoned"] == []
    below.refresh_from_db()
    assert below.status != "terminated"
