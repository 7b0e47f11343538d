"""The channels a notification can go through, chosen by configuration
(notify.channels) and each with its own sender: email through Django's email
backend, Microsoft Teams and Slack incoming webhooks over HTTP (a receiver on
127.0.0.1 here). Spec 002 §3.5: "Trigger notification | No | Deduplicate via
notification_id" and "Side effects (notifications) tracked to prevent
duplicates"."""

from __future__ import annotations

import pytest
from django.core import mail

from codex.configuration.models import Setting
from codex.notifications.announcements import announce
from codex.notifications.jobs import drain_outbox, sender_for
from codex.notifications.models import Notification
from integrations.notify.chat import SlackSender, TeamsSender
from tests.configuration.factories import KEY_A
from tests.notifications.conftest import Hook

pytestmark = pytest.mark.django_db


@pytest.fixture
def channels(settings, hook):
    """Teams, Slack and email configured in the database, as an operator
    would in the console (the webhook URLs encrypted)."""
    settings.CODEX_FERNET_KEYS = KEY_A
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    put = Setting.objects.put
    put("notify.channels", "email, teams, slack", actor="user:alice")
    put("notify.email.to", "team@example.com", actor="user:alice")
    put("notify.teams.webhook_url", f"{hook}/ok", actor="user:alice")
    put("notify.slack.webhook_url", f"{hook}/ok", actor="user:alice")
    return hook


def test_one_announcement_queues_one_row_per_configured_channel(channels):
    rows = announce("released:FEAT-1", subject="Released", body="It shipped.")

    assert [(r.notification_id, r.channel, r.recipient) for r in rows] == [
        ("released:FEAT-1:email", "email", "team@example.com"),
        ("released:FEAT-1:teams", "teams", "teams"),
        ("released:FEAT-1:slack", "slack", "slack"),
    ]


def test_the_drain_sends_each_row_through_its_channel_once(channels):
    announce("released:FEAT-1", subject="FEAT-1 released", body="It <b>shipped</b>.")

    assert drain_outbox() == {"sent": 3, "retried": 0, "failed": 0, "skipped": 0}
    assert drain_outbox()["sent"] == 0
    announce("released:FEAT-1", subject="FEAT-1 released", body="again")
    assert drain_outbox()["sent"] == 0

    (email,) = mail.outbox
    assert email.to == ["team@example.com"]
    assert email.subject == "FEAT-1 released"
    teams, slack = sorted(Hook.received, key=lambda r: "attachments" in r["json"])[::-1]
    card = teams["json"]["attachments"][0]
    assert card["contentType"] == "application/vnd.microsoft.card.adaptive"
    assert [b["text"] for b in card["content"]["body"]] == [
        "FEAT-1 released",
        "It <b>shipped</b>.",
    ]
    assert teams["headers"]["Idempotency-Key"] == "released:FEAT-1:teams"
    assert slack["json"]["text"] == "FEAT-1 released\nIt &lt;b&gt;shipped&lt;/b&gt;."
    assert Notification.objects.filter(status="sent").count() == 3


def test_slack_text_from_an_issue_cannot_mention_the_whole_channel():
    notification = Notification(
        notification_id="n", subject="<!channel> look", body="<@U123> & <!here>"
    ).outgoing_message()

    payload = SlackSender(url="http://127.0.0.1:9/unused").payload(notification)

    assert "<!" not in str(payload) and "<@" not in str(payload)
    assert payload["text"] == "&lt;!channel&gt; look\n&lt;@U123&gt; &amp; &lt;!here&gt;"


def test_a_busy_chat_webhook_is_retried_later_not_lost(settings, hook):
    settings.CODEX_FERNET_KEYS = KEY_A
    Setting.objects.put("notify.channels", "teams", actor="user:alice")
    Setting.objects.put("notify.teams.webhook_url", f"{hook}/busy", actor="u:a")
    (row,) = announce("escalated:FEAT-2:1", subject="Escalated", body="Answer.")

    assert drain_outbox()["retried"] == 1

    row.refresh_from_db()
    assert (row.status, row.attempts) == ("pending", 1)
    assert "429" in row.last_error


def test_a_chat_channel_without_its_url_needs_a_person(settings):
    settings.CODEX_FERNET_KEYS = KEY_A
    Setting.objects.put("notify.channels", "slack", actor="user:alice")
    (row,) = announce("failed:FEAT-3", subject="Failed", body="Broken.")

    assert drain_outbox()["failed"] == 1

    row.refresh_from_db()
    assert row.status == "failed"
    assert "notify.slack.webhook_url is not configured" in row.last_error


def test_the_teams_url_is_read_from_the_database_when_sending(settings):
    settings.CODEX_FERNET_KEYS = KEY_A
    Setting.objects.put(
        "notify.teams.webhook_url", "https://example.webhook.office.com/a", actor="u"
    )

    sender = sender_for("teams")

    assert isinstance(sender, TeamsSender)
    assert sender.url == "https://example.webhook.office.com/a"


def test_unknown_channels_are_ignored_and_email_needs_recipients(settings):
    Setting.objects.put("notify.channels", "pager, email, log", actor="user:alice")

    rows = announce("released:FEAT-4", subject="Released", body="Done.")

    assert [r.channel for r in rows] == ["log"]
