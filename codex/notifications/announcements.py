"""Through which channels Codex tells people something.

An announcement is one outbox row per channel of configuration
`notify.channels` (log, email, teams, slack, webhook), written in the same
transaction as the change that caused it, so an announcement exists exactly
when its change does. Its notification id names the event and the channel
(`escalated:<task>:<escalation>:teams`), so a step run twice, or a transition
retried, queues nothing new: the outbox deduplicates by notification id and
its delivery claims each row once. What a task's changes announce is the
tasks app's (codex.tasks.announcements).
"""

from __future__ import annotations

import logging

from django.db import models

from codex.notifications.models import Notification

logger = logging.getLogger(__name__)

KNOWN_CHANNELS = ("log", "email", "teams", "slack", "webhook")
# A recipient for the channels whose address is their configuration (the chat
# webhooks' URL is a secret and is not copied into every row).
CHANNEL_RECIPIENT = {
    "log": "log",
    "teams": "teams",
    "slack": "slack",
    "webhook": "webhook",
}
BODY_CHARS = 4000


def configured_channels() -> list[str]:
    """The channels of configuration notify.channels, known ones only, in order."""
    from codex.configuration.config import get_config

    raw = get_config("notify.channels") or ""
    channels = []
    for name in (part.strip().lower() for part in raw.split(",")):
        if not name or name in channels:
            continue
        if name not in KNOWN_CHANNELS:
            logger.warning("notify.channels names an unknown channel %r", name)
            continue
        channels.append(name)
    return channels


def _recipient(channel: str) -> str | None:
    if channel != "email":
        return CHANNEL_RECIPIENT[channel]
    from codex.configuration.config import get_config

    return get_config("notify.email.to")


def announce(
    key: str, *, subject: str, body: str, task: models.Model | None = None
) -> list[Notification]:
    """Queue `subject`/`body` once per configured channel, with notification
    id `<key>:<channel>`; returns the rows (old ones when queued before).

    The email channel without recipients (notify.email.to) is skipped with a
    warning rather than queued to fail.
    """
    rows = []
    for channel in configured_channels():
        recipient = _recipient(channel)
        if not recipient:
            logger.warning("notification %s: no notify.email.to, not emailed", key)
            continue
        row, _ = Notification.objects.enqueue(
            f"{key}:{channel}"[:200],
            channel=channel,
            recipient=recipient,
            subject=subject[:300],
            body=body[:BODY_CHARS],
            task=task,
        )
        rows.append(row)
    return rows
