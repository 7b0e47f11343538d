"""The review-limits job runs every half hour over every running coding
instance: what it costs must not grow with how many are running (it asked
each instance for its failed reviews in turn, a query apiece)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

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
