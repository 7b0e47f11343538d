"""Chat channels: Microsoft Teams and Slack incoming webhooks.

Both are HTTP POSTs of a JSON message to a URL the chat service made for a
channel; the URL is the credential, so the caller keeps it (the outbox reads
it from an encrypted configuration value, notify.teams.webhook_url or
notify.slack.webhook_url, when it sends) and passes it in: without one, a send
needs a person. Failures are classified as for any webhook
(`WebhookSender`): 429 and 5xx wait (honouring Retry-After), other 4xx need a
person, lost connections retry.
"""

from __future__ import annotations

from typing import Any

from integrations.notify.senders import OutgoingMessage, WebhookSender

# Slack shows at most 3000 characters in one text block; Teams cards are
# limited to about 28 KB in all. Longer bodies are cut with a marker.
SLACK_TEXT_CHARS = 3000
TEAMS_TEXT_CHARS = 20000


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def slack_escape(text: str) -> str:
    """Slack's three control characters escaped, so that text from an issue
    cannot mention @channel (`<!channel>`) or make links."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


class ChatSender(WebhookSender):
    """A chat channel's incoming webhook: its URL is always the caller's."""

    def configured_url(self) -> str | None:
        """None: no setting holds it, the caller passes the URL."""
        return None


class TeamsSender(ChatSender):
    """Posts an Adaptive Card message to a Teams incoming webhook (the
    `message` with an `application/vnd.microsoft.card.adaptive` attachment
    that Teams' Workflows and connector webhooks accept)."""

    channel = "teams"
    url_source = "configuration notify.teams.webhook_url"

    def payload(self, notification: OutgoingMessage) -> dict[str, Any]:
        """The card: the subject as its title, the body as wrapped text."""
        body = [
            {
                "type": "TextBlock",
                "text": notification.subject or "Codex",
                "weight": "Bolder",
                "size": "Medium",
                "wrap": True,
            },
            {
                "type": "TextBlock",
                "text": _cut(notification.body, TEAMS_TEXT_CHARS),
                "wrap": True,
            },
        ]
        return {
            "type": "message",
            "attachments": [
                {
                    "contentType": "application/vnd.microsoft.card.adaptive",
                    "contentUrl": None,
                    "content": {
                        "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
                        "type": "AdaptiveCard",
                        "version": "1.4",
                        "body": body,
                    },
                }
            ],
        }


class SlackSender(ChatSender):
    """Posts a message to a Slack incoming webhook: `text` (the fallback Slack
    shows in notifications) and the same as blocks."""

    channel = "slack"
    url_source = "configuration notify.slack.webhook_url"

    def payload(self, notification: OutgoingMessage) -> dict[str, Any]:
        """Slack's incoming-webhook message."""
        subject = slack_escape(notification.subject or "Codex")
        body = _cut(slack_escape(notification.body), SLACK_TEXT_CHARS)
        return {
            "text": f"{subject}\n{body}".strip(),
            "blocks": [
                {
                    "type": "header",
                    "text": {"type": "plain_text", "text": subject[:150]},
                },
                {"type": "section", "text": {"type": "mrkdwn", "text": body or " "}},
            ],
        }
