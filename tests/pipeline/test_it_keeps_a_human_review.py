"""A person's "changes requested" on GitHub, recorded in the cycle's review
report, is not overwritten by the reviewer agent's approval: it blocks release."""

from __future__ import annotations

import pytest

from codex.tasks.jobs import advance_task
from codex.tasks.models import ReviewReport
from tests.factories import make_task

pytestmark = pytest.mark.django_db


def test_an_agent_approval_does_not_erase_a_human_changes_request(scripted_runner):
    task = make_task()
    for _ in range(4):
        advance_task(task.task_id)
    task.refresh_from_db()
    assert task.phase == "review"
    ReviewReport.objects.create(
        task=task,
        cycle=1,
        assessment="request_changes",
        comments=[
            {
                "id": "github-review-7",
                "severity": "blocking",
                "issue": "Please add a test",
                "category": "human_review",
            }
        ],
        feedback={"human_reviews": [{"id": 7, "body": "Please add a test"}]},
    )
    assert advance_task(task.task_id) == "in_progress/implementation"
    report = ReviewReport.objects.get(task=task, cycle=1)
    assert report.assessment == "approve"  # the agent's own verdict
    assert [c["id"] for c in report.comments] == ["github-review-7"]
    assert report.feedback["human_reviews"][0]["id"] == 7
    assert report.feedback["blocking_count"] == 1
