"""Spec 002 §3.5: "Side effects (notifications) tracked to prevent duplicates" -
delivery claims the row with one conditional UPDATE, so it is sent at most once."""

from __future__ import annotations

import pytest

from codex.events.models import Event
from codex.notifications.models import Notification
from tests.notifications.factories import Sender, enqueue

pytestmark = pytest.mark.django_db


def test_delivering_twice_sends_once():
    notification = enqueue()
    sender = Sender()

    assert notification.deliver(sender) is True
    assert notification.deliver(sender) is False
    assert Notification.objects.get(pk=notification.pk).deliver(sender) is False

    assert sender.sent == [notification.notification_id]
    notification.refresh_from_db()
    assert notification.status == "sent"
    assert notification.attempts == 1
    assert notification.sent_at is not None


def test_a_worker_with_a_stale_copy_does_not_send():
    notification = enqueue()
    stale = Notification.objects.get(pk=notification.pk)
    notification.deliver(Sender())

    sender = Sender()
    assert stale.deliver(sender) is False
    assert sender.sent == []


def test_a_row_left_sending_by_a_dead_worker_is_not_sent_again():
    notification = enqueue()
    assert notification.claim()  # the worker died right after claiming

    sender = Sender()
    assert Notification.objects.get(pk=notification.pk).deliver(sender) is False
    assert sender.sent == []
    assert Notification.objects.due().count() == 0


def test_every_transition_is_in_the_event_log():
    notification = enqueue()
    notification.deliver(Sender())

    steps = Event.objects.filter(
        subject=f"notification:{notification.notification_id}"
    ).values_list("source", "target")
    assert list(steps) == [("pending", "sending"), ("sending", "sent")]
