"""Worker entry points for the notification outbox."""

from __future__ import annotations

import logging

from codex.notifications.models import Notification, NotificationStatus
from integrations.notify.senders import get_sender

logger = logging.getLogger(__name__)


def drain_outbox(limit: int = 100) -> dict[str, int]:
    """Scheduled: deliver up to `limit` due notifications (pending, next attempt
    time reached), each through its channel's sender (email, teams, slack,
    webhook, log: integrations.notify.senders.get_sender).

    Returns counts: sent, retried (failed, another attempt scheduled), failed
    (given up) and skipped (another worker claimed the row first). Safe to run
    from several workers at once: `Notification.deliver` claims each row with
    one conditional UPDATE, so each notification is sent at most once.
    """
    senders: dict[str, object] = {}
    counts = {"sent": 0, "retried": 0, "failed": 0, "skipped": 0}
    # Ids first: a row another worker sends meanwhile is then skipped by the
    # claim, rather than the queryset being re-evaluated under our feet.
    due = list(Notification.objects.due().values_list("pk", flat=True)[:limit])
    for notification in Notification.objects.filter(pk__in=due).order_by(
        "next_attempt_at", "id"
    ):
        attempted = False

        def send(row: Notification) -> None:
            nonlocal attempted
            attempted = True
            if row.channel not in senders:
                # One per channel and drain: a chat sender reads its URL once.
                senders[row.channel] = get_sender(row.channel)
            receipt = senders[row.channel].send(row)
            logger.info("notification %s delivered: %s", row.notification_id, receipt)

        if notification.deliver(send):
            counts["sent"] += 1
        elif not attempted:
            counts["skipped"] += 1
        elif notification.status == NotificationStatus.PENDING:
            counts["retried"] += 1
        else:
            counts["failed"] += 1
    return counts
