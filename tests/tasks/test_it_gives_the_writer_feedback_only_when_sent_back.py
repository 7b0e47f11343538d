"""issue-state.json's review.feedback_for_writer is set when the work goes
back to the writer, and only then: "Reviewer Agent ... On reject: Sets
review.feedback_for_writer"; "Build Agent ... On failure: Sets
review.feedback_for_writer with build errors". An approval leaves it null."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from codex.tasks.exports import issue_state
from codex.tasks.models import ReviewReport, VerificationReport
from tests.factories import make_task

pytestmark = pytest.mark.django_db


def review(task, assessment, message, at=None):
    return ReviewReport.objects.create(
        task=task,
        cycle=1,
        assessment=assessment,
        feedback={"message": message},
        created_at=at or timezone.now(),
    )


def feedback_for_writer(task):
    return issue_state(task)["review"]["feedback_for_writer"]


def test_an_approval_sets_none():
    task = make_task()
    review(task, "approve", "Small and clear.")
    assert issue_state(task)["review"]["verdict"] == "APPROVED"
    assert feedback_for_writer(task) is None


def test_a_rejection_sends_the_reviewers_message():
    task = make_task()
    review(task, "request_changes", "Hash the passwords.")
    assert feedback_for_writer(task) == "Hash the passwords."


def test_a_build_failure_after_the_review_sends_the_build_errors():
    task = make_task()
    review(task, "request_changes", "Hash the passwords.", timezone.now())
    VerificationReport.objects.create(
        task=task,
        cycle=2,
        recommendation="request_changes",
        feedback={"summary": "2 test(s) failed: login"},
        created_at=timezone.now() + timedelta(minutes=5),
    )
    assert feedback_for_writer(task) == "2 test(s) failed: login"
