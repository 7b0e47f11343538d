"""Worker entry points for the notification outbox."""

from __future__ import annotations

import logging

from codex.configuration.config import get_config
from codex.notifications.models import Notification, NotificationStatus
from integrations.notify.senders import OutgoingMessage, Sender, get_sender

logger = logging.getLogger(__name__)

# The configuration key of each chat channel's webhook URL: the URL is the
# credential, so it is an encrypted value read when the outbox sends.
CHAT_URL_KEYS = {
    "teams": "notify.teams.webhook_url",
    "slack": "notify.slack.webhook_url",
}


def sender_for(channel: str) -> Sender:
    """The sender of `channel` (integrations.notify.senders.get_sender), given
    the chat channel's webhook URL from the configuration."""
    url_key = CHAT_URL_KEYS.get(channel)
    return get_sender(channel, url=get_config(url_key) if url_key else None)


def drain_outbox(limit: int = 100) -> dict[str, int]:
    """Scheduled: deliver up to `limit` due notifications (pending, next attempt
    time reached), each through its channel's sender (email, teams, slack,
    webhook, log: `sender_for`).

    Returns counts: sent, retried (failed, another attempt scheduled), failed
    (given up) and skipped (another worker claimed the row first). Safe to run
    from several workers at once: `Notification.deliver` claims each row with
    one conditional UPDATE, so each notification is sent at most once.
    """
    senders: dict[str, Sender] = {}
    counts = {"sent": 0, "retried": 0, "failed": 0, "skipped": 0}
    # Ids first: a row another worker sends meanwhile is then skipped by the
    # claim, rather than the queryset being re-evaluated under our feet.
    due = list(Notification.objects.due().values_list("pk", flat=True)[:limit])
    for notification in Notification.objects.filter(pk__in=due).order_by(
        "next_attempt_at", "id"
    ):
        attempted = False

        def send(message: OutgoingMessage) -> None:
            nonlocal attempted
            attempted = True
            if message.channel not in senders:
                # One per channel and drain: a chat channel's URL is read once.
                senders[message.channel] = sender_for(message.channel)
            receipt = senders[message.channel].send(message)
            logger.info(
                "notification %s delivered: %s", message.notification_id, receipt
            )

        if notification.deliver(send):
            counts["sent"] += 1
        elif not attempted:
            counts["skipped"] += 1
        elif notification.status == NotificationStatus.PENDING:
            counts["retried"] += 1
        else:
            counts["failed"] += 1
    return counts
