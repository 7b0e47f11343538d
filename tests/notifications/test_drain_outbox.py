"""drain_outbox delivers each due notification once, with the configured sender."""

from __future__ import annotations

from datetime import timedelta

import pytest
import time_machine
from django.utils import timezone

from codex.core.errors import Action, make_error
from codex.notifications.jobs import drain_outbox
from codex.notifications.models import Notification
from tests.notifications.factories import enqueue
from tests.notifications.recording_sender import RecordingSender

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def recording(settings):
    settings.CODEX_NOTIFY_SENDER = (
        "tests.notifications.recording_sender.RecordingSender"
    )
    RecordingSender.reset()
    yield RecordingSender
    RecordingSender.reset()


def due_at(notification_id: str, moment) -> Notification:
    """Queue a notification whose next attempt is at `moment`."""
    notification = enqueue(notification_id)
    Notification.objects.filter(pk=notification.pk).update(next_attempt_at=moment)
    return notification


def failure(action: Action, retry_after: int | None = None):
    return make_error("notify", 0, action, "test", retry_after=retry_after).exception()


def test_due_notifications_are_sent_once_even_when_drained_twice(recording):
    first, second = enqueue("n-1"), enqueue("n-2")

    assert drain_outbox() == {"sent": 2, "retried": 0, "failed": 0, "skipped": 0}
    assert drain_outbox() == {"sent": 0, "retried": 0, "failed": 0, "skipped": 0}

    assert sorted(recording.sent) == ["n-1", "n-2"]
    for notification in (first, second):
        notification.refresh_from_db()
        assert (notification.status, notification.attempts) == ("sent", 1)


def test_notifications_not_yet_due_wait(recording):
    due_at("later", timezone.now() + timedelta(minutes=5))
    assert drain_outbox()["sent"] == 0
    with time_machine.travel(timezone.now() + timedelta(minutes=6)):
        assert drain_outbox()["sent"] == 1
    assert recording.sent == ["later"]


def test_a_row_claimed_by_another_worker_is_skipped(recording, monkeypatch):
    notification = enqueue("taken")
    listed = Notification.objects.filter(pk=notification.pk)
    # Our query listed the row; another worker claimed it before we did.
    monkeypatch.setattr(type(Notification.objects), "due", lambda self: listed)
    assert Notification.objects.get(pk=notification.pk).claim()

    counts = drain_outbox()

    assert counts == {"sent": 0, "retried": 0, "failed": 0, "skipped": 1}
    assert recording.sent == []
    assert Notification.objects.get(pk=notification.pk).status == "sending"


def test_failures_are_retried_or_given_up_by_their_classification(recording):
    enqueue("busy")
    enqueue("refused")
    enqueue("fine")
    recording.failures = {
        "busy": failure(Action.WAIT_RETRY, retry_after=300),
        "refused": failure(Action.ABORT),
    }

    assert drain_outbox() == {"sent": 1, "retried": 1, "failed": 1, "skipped": 0}

    busy = Notification.objects.get(notification_id="busy")
    assert busy.status == "pending" and busy.attempts == 1
    assert Notification.objects.get(notification_id="refused").status == "failed"
    # Not due again until the server's 300 s have passed.
    recording.failures = {}
    assert drain_outbox()["sent"] == 0
    with time_machine.travel(timezone.now() + timedelta(seconds=301)):
        assert drain_outbox()["sent"] == 1
    assert recording.sent == ["fine", "busy"]


def test_at_most_limit_notifications_per_drain_oldest_first(recording):
    now = timezone.now()
    for minutes in (3, 2, 1):
        due_at(f"n-{minutes}", now - timedelta(minutes=minutes))
    assert drain_outbox(limit=2)["sent"] == 2
    assert recording.sent == ["n-3", "n-2"]
    assert drain_outbox(limit=2)["sent"] == 1


def test_the_default_sender_logs(settings, caplog):
    settings.CODEX_NOTIFY_SENDER = "integrations.notify.senders.LogSender"
    enqueue("logged")
    with caplog.at_level("INFO"):
        assert drain_outbox()["sent"] == 1
    assert any("logged" in record.getMessage() for record in caplog.records)
