"""Merges, closes, reviews requesting changes, and CI verdicts."""

from __future__ import annotations

import pytest

from codex.events.models import Event, EventKind
from codex.fleet.models import InstanceStatus
from codex.tasks.models import ReviewReport, Status
from codex.webhooks.jobs import process_deferred
from codex.webhooks.models import Outcome, WebhookDelivery
from tests.factories import make_task, put_in_state
from tests.fleet.factories import make_instance, put_instance_in
from tests.webhooks.conftest import load, process_all

pytestmark = pytest.mark.django_db
PR_URL = "https://github.com/Codertocat/Hello-World/pull/2"
ADVANCE = "codex.tasks.jobs.advance_task"


def last() -> WebhookDelivery:
    return WebhookDelivery.objects.order_by("-pk").first()


def closed(merged: bool) -> dict:
    payload = load("pull_request", "closed.payload.json")
    payload["pull_request"]["merged"] = merged
    return payload


@pytest.fixture
def instance(hello_world):
    instance = make_instance(repository=hello_world, issue_number=1, pr_number=2)
    return put_instance_in(instance, InstanceStatus.PR_CREATED)


def test_a_merge_marks_the_instances_merged(deliver, instance):
    deliver("pull_request", closed(merged=True))
    process_all()
    instance.refresh_from_db()
    assert instance.status == InstanceStatus.PR_MERGED
    assert last().outcome == Outcome.PROCESSED


def test_a_close_without_merge_marks_them_closed_and_tells_the_task(
    deliver, instance, hello_world
):
    task = make_task(hello_world)
    put_in_state(task, status=Status.IN_PROGRESS, phase="review", pr_url=PR_URL)
    deliver("pull_request", closed(merged=False))
    process_all()
    instance.refresh_from_db()
    task.refresh_from_db()
    assert instance.status == InstanceStatus.PR_CLOSED
    assert task.status == Status.IN_PROGRESS and not task.pr_merged
    assert task.events.filter(
        kind=EventKind.WEBHOOK, reason__contains="closed"
    ).exists()


def test_a_merge_of_a_task_in_release_sets_pr_merged_and_advances_it(
    deliver, hello_world, enqueued, django_capture_on_commit_callbacks
):
    task = make_task(hello_world)
    put_in_state(task, status=Status.IN_PROGRESS, phase="release", pr_url=PR_URL)
    enqueued.clear()
    deliver("pull_request", closed(merged=True))
    with django_capture_on_commit_callbacks(execute=True):
        process_all()
    task.refresh_from_db()
    assert task.pr_merged is True
    assert task.lease_holder is None
    assert enqueued == [(ADVANCE, task.task_id)]


def test_a_merge_while_the_task_is_leased_is_deferred_then_applied(
    deliver, hello_world
):
    task = make_task(hello_world)
    put_in_state(task, status=Status.IN_PROGRESS, phase="release", pr_url=PR_URL)
    task.acquire_lease("worker:busy")
    deliver("pull_request", closed(merged=True))
    process_all()
    delivery = last()
    assert delivery.outcome == Outcome.DEFERRED and delivery.processed_at is None
    task.release_lease()
    assert process_deferred() == 1
    task.refresh_from_db()
    assert task.pr_merged is True
    assert last().outcome == Outcome.PROCESSED


def review(state: str = "changes_requested", sender: str = "Codertocat") -> dict:
    payload = load("pull_request_review", "submitted.payload.json")
    payload["review"].update(state=state, body="Please add tests.", id=4242)
    payload["sender"].update(login=sender, type="User")
    return payload


def test_changes_requested_in_review_feed_the_review_loop(
    deliver, hello_world, enqueued, django_capture_on_commit_callbacks
):
    task = make_task(hello_world)
    put_in_state(task, status=Status.IN_PROGRESS, phase="review", pr_url=PR_URL)
    enqueued.clear()
    deliver("pull_request_review", review())
    deliver("pull_request_review", review())  # another delivery, same review
    with django_capture_on_commit_callbacks(execute=True):
        process_all()
    report = ReviewReport.objects.get(task=task)
    assert report.cycle == 1 and report.assessment == "request_changes"
    assert [c["issue"] for c in report.comments] == ["Please add tests."]
    assert report.comments[0]["severity"] == "blocking"
    assert len(report.feedback["human_reviews"]) == 1
    assert (ADVANCE, task.task_id) in enqueued
    assert task.events.filter(kind=EventKind.WEBHOOK).count() == 2


def test_changes_requested_outside_review_are_only_recorded(deliver, hello_world):
    task = make_task(hello_world)
    put_in_state(task, status=Status.IN_PROGRESS, phase="implementation", pr_url=PR_URL)
    deliver("pull_request_review", review())
    process_all()
    assert not ReviewReport.objects.exists()
    assert task.events.filter(kind=EventKind.WEBHOOK).exists()


@pytest.mark.parametrize(
    "state, sender", [("commented", "Codertocat"), ("changes_requested", "stranger")]
)
def test_other_reviews_and_non_writers_change_nothing(
    deliver, hello_world, state, sender
):
    task = make_task(hello_world)
    put_in_state(task, status=Status.IN_PROGRESS, phase="review", pr_url=PR_URL)
    deliver("pull_request_review", review(state, sender))
    process_all()
    assert not ReviewReport.objects.exists()
    assert last().outcome == Outcome.IGNORED


# -- checks ---------------------------------------------------------------------


@pytest.fixture
def implementing(hello_world):
    task = make_task(hello_world)
    return put_in_state(
        task, status=Status.IN_PROGRESS, phase="implementation", branch="changes"
    )


def test_a_successful_check_suite_sets_ci_passing_and_advances(
    deliver, implementing, enqueued, django_capture_on_commit_callbacks
):
    enqueued.clear()
    deliver("check_suite", load("check_suite", "completed.payload.json"))
    with django_capture_on_commit_callbacks(execute=True):
        process_all()
    implementing.refresh_from_db()
    assert implementing.ci_passing is True
    assert implementing.lease_holder is None
    assert enqueued == [(ADVANCE, implementing.task_id)]
    assert implementing.events.filter(kind=EventKind.WEBHOOK).exists()


def test_a_failed_check_run_sets_ci_failing(deliver, implementing):
    put_in_state(implementing, ci_passing=True)
    deliver("check_run", load("check_run", "completed.1.payload.json"))
    process_all()
    implementing.refresh_from_db()
    assert implementing.ci_passing is False


def test_one_successful_check_run_is_not_the_whole_ci(deliver, implementing):
    deliver("check_run", load("check_run", "completed.payload.json"))
    process_all()
    implementing.refresh_from_db()
    assert implementing.ci_passing is None
    assert last().outcome == Outcome.IGNORED


def test_a_check_while_the_task_is_leased_is_deferred(deliver, implementing):
    implementing.acquire_lease("worker:busy")
    deliver("check_suite", load("check_suite", "completed.payload.json"))
    process_all()
    implementing.refresh_from_db()
    assert implementing.ci_passing is None
    assert last().outcome == Outcome.DEFERRED


def test_a_verdict_about_an_older_commit_is_ignored(deliver, implementing):
    payload = load("check_suite", "completed.payload.json")
    old = payload["check_suite"]["head_sha"]
    put_in_state(implementing, commits=[old, "f" * 40])
    deliver("check_suite", payload)
    process_all()
    implementing.refresh_from_db()
    assert implementing.ci_passing is None


def test_a_check_on_a_branch_without_a_task_is_ignored(deliver, hello_world):
    deliver("check_suite", load("check_suite", "completed.1.payload.json"))
    process_all()
    assert last().outcome == Outcome.IGNORED
    assert not Event.objects.filter(kind=EventKind.WEBHOOK).exists()
