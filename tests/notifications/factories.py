"""Test helpers for the notification outbox."""

from __future__ import annotations

import itertools

from codex.notifications.models import Notification
from integrations.notify.senders import OutgoingMessage

_ids = itertools.count(1)


def enqueue(notification_id: str | None = None, **fields) -> Notification:
    """Queue a notification with plausible defaults."""
    values = {"channel": "teams", "recipient": "team-alpha", "subject": "Escalated"}
    values.update(fields)
    notification, _ = Notification.objects.enqueue(
        notification_id or f"FEAT-20260119-abc123:escalated:{next(_ids)}", **values
    )
    return notification


def outgoing(notification_id: str | None = None, **fields) -> OutgoingMessage:
    """Queue a notification (as `enqueue`) and return what a sender delivers."""
    return enqueue(notification_id, **fields).outgoing_message()


class Sender:
    """Records what it sends; raises `fail_with` instead when set."""

    def __init__(self, fail_with: Exception | None = None) -> None:
        self.sent: list[str] = []
        self.fail_with = fail_with

    def __call__(self, notification) -> None:
        if self.fail_with is not None:
            raise self.fail_with
        self.sent.append(notification.notification_id)
