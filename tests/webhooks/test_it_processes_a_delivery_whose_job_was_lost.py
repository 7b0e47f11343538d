"""A stored delivery whose job was lost is processed by the schedule.

The Redis broker delivers a job at most once: a restart of Redis drops the
queued jobs, a killed worker the one it ran. The delivery itself is stored
and committed before GitHub gets its 202, so the scheduled process_deferred
finds it (pending, not taken within PROCESSING_TIMEOUT of arriving, or taken
by a worker that died) and processes it; one still within that time is left
to its job, and the at-most-once `take` keeps a late job from doing it twice.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from codex.tasks.models import Task
from codex.webhooks.jobs import process_deferred, process_delivery
from codex.webhooks.models import PROCESSING_TIMEOUT, Outcome, WebhookDelivery
from tests.webhooks.test_issues_and_comments import labeled

pytestmark = pytest.mark.django_db

LONG_AGO = PROCESSING_TIMEOUT + timedelta(minutes=1)


def stored(deliver, *, received_ago: timedelta, taken_ago: timedelta | None = None):
    """A labelled-issue delivery, stored as the endpoint stores it, whose job
    never ran; received and taken (by a worker) that long ago."""
    assert deliver("issues", labeled()).status_code == 202
    delivery = WebhookDelivery.objects.get()
    assert delivery.outcome == Outcome.PENDING
    now = timezone.now()
    WebhookDelivery.objects.filter(pk=delivery.pk).update(
        received_at=now - received_ago,
        processing_started_at=None if taken_ago is None else now - taken_ago,
    )
    return delivery


def test_a_delivery_never_taken_is_processed_and_its_task_created(deliver, hello_world):
    delivery = stored(deliver, received_ago=LONG_AGO)
    assert process_deferred() == 1
    delivery.refresh_from_db()
    assert delivery.outcome == Outcome.PROCESSED and delivery.processed_at
    assert Task.objects.get().issue_number == 1
    # The lost job turning up after all, and the next round: nothing twice.
    assert process_delivery(delivery.pk).startswith("skipped")
    assert process_deferred() == 0
    assert Task.objects.count() == 1


def test_a_delivery_taken_by_a_worker_that_died_is_processed(deliver, hello_world):
    delivery = stored(deliver, received_ago=LONG_AGO, taken_ago=LONG_AGO)
    assert process_deferred() == 1
    delivery.refresh_from_db()
    assert delivery.outcome == Outcome.PROCESSED
    assert delivery.attempts == 1


@pytest.mark.parametrize(
    ("received_ago", "taken_ago", "why"),
    [
        (timedelta(seconds=30), None, "its job may still be queued"),
        (LONG_AGO, timedelta(minutes=1), "a worker is processing it"),
        (timedelta(hours=25), None, "older than the schedule's 24 hours"),
    ],
)
def test_a_delivery_its_job_may_still_bring_is_left_alone(
    deliver, hello_world, received_ago, taken_ago, why
):
    delivery = stored(deliver, received_ago=received_ago, taken_ago=taken_ago)
    assert process_deferred() == 0, why
    delivery.refresh_from_db()
    assert delivery.outcome == Outcome.PENDING and delivery.processed_at is None
    assert not Task.objects.exists()
