"""A failed send is retried later with backoff (1, 2, 4 ... minutes, at most an
hour), the server's retry_after when it asks for longer, and at most
CODEX_NOTIFY_MAX_ATTEMPTS (5) times; non-recoverable failures stop at once."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import time_machine

from codex.core.errors import classify_http
from codex.notifications.models import backoff
from tests.notifications.factories import Sender, enqueue

pytestmark = pytest.mark.django_db

T0 = datetime(2025, 3, 1, 12, 0, 0, tzinfo=UTC)


@pytest.fixture
def clock():
    with time_machine.travel(T0, tick=False) as traveller:
        yield traveller


def test_backoff_doubles_up_to_an_hour():
    assert [backoff(n).total_seconds() for n in (1, 2, 3, 7, 8)] == [
        60,
        120,
        240,
        3600,
        3600,
    ]


def test_a_failure_schedules_a_retry_and_is_not_due_before_it(clock):
    notification = enqueue()

    assert notification.deliver(Sender(TimeoutError("teams slow"))) is False

    notification.refresh_from_db()
    assert notification.status == "pending"
    assert notification.attempts == 1
    assert notification.next_attempt_at == T0 + timedelta(minutes=1)
    assert "TimeoutError: teams slow" in notification.last_error
    sender = Sender()
    assert notification.deliver(sender) is False  # not due yet
    clock.shift(timedelta(minutes=1))
    assert notification.deliver(sender) is True
    assert sender.sent == [notification.notification_id]


def test_the_servers_retry_after_wins_when_longer(clock):
    notification = enqueue()
    limited = classify_http("notify", 429, headers={"Retry-After": "600"}).exception()

    notification.deliver(Sender(limited))

    notification.refresh_from_db()
    assert notification.next_attempt_at == T0 + timedelta(seconds=600)


def test_it_gives_up_after_five_attempts(clock, settings):
    settings.CODEX_NOTIFY_MAX_ATTEMPTS = 5
    notification = enqueue()
    for _ in range(5):
        clock.shift(timedelta(hours=1))
        notification.deliver(Sender(ConnectionError("down")))

    notification.refresh_from_db()
    assert notification.status == "failed"
    assert notification.attempts == 5


def test_a_non_recoverable_failure_fails_at_once(clock):
    notification = enqueue()
    refused = classify_http("notify", 404).exception()  # manual_review

    notification.deliver(Sender(refused))

    notification.refresh_from_db()
    assert notification.status == "failed"
    assert notification.attempts == 1
