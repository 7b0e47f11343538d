"""The notification channels: log, e-mail (Django mail) and webhook (urllib)."""

from __future__ import annotations

import logging
import smtplib
import socket
from collections.abc import Iterator

import pytest
from django.core import mail
from django.core.mail.backends.base import BaseEmailBackend

from codex.core.errors import Action, ClassifiedFailure
from integrations.notify.senders import (
    EmailSender,
    LogSender,
    Sender,
    WebhookSender,
    get_sender,
)
from tests.factories import make_task
from tests.notifications.conftest import Hook
from tests.notifications.factories import enqueue, outgoing

pytestmark = pytest.mark.django_db


# -- the protocol and get_sender -------------------------------------------------


def test_get_sender_builds_the_configured_class(settings):
    assert isinstance(get_sender(), LogSender)  # the development default
    settings.CODEX_NOTIFY_SENDER = "integrations.notify.senders.EmailSender"
    sender = get_sender()
    assert isinstance(sender, EmailSender)
    assert isinstance(sender, Sender)


def test_log_sender_logs_at_info_and_returns_a_receipt(caplog):
    notification = outgoing("n-log", subject="Escalated", body="Please answer.")
    with caplog.at_level(logging.INFO, logger="integrations.notify.senders"):
        receipt = LogSender().send(notification)
    assert receipt == {"channel": "log", "id": "n-log"}
    (record,) = caplog.records
    assert record.levelno == logging.INFO
    assert "n-log" in record.getMessage() and "Please answer." in record.getMessage()


# -- e-mail ------------------------------------------------------------------------


class FailingBackend(BaseEmailBackend):
    """A mail backend that raises `error` (set by the test) instead of sending."""

    error: Exception | None = None

    def send_messages(self, email_messages):
        assert FailingBackend.error is not None
        raise FailingBackend.error


@pytest.fixture
def failing_mail(settings) -> Iterator[type[FailingBackend]]:
    settings.EMAIL_BACKEND = f"{__name__}.FailingBackend"
    yield FailingBackend
    FailingBackend.error = None


def test_email_goes_to_the_recipient_with_a_stable_message_id(settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    settings.DEFAULT_FROM_EMAIL = "codex@example.com"
    notification = outgoing(
        "n-mail", recipient="bob@example.com", subject="Escalated", body="Answer me."
    )

    receipt = EmailSender().send(notification)

    (message,) = mail.outbox
    assert message.to == ["bob@example.com"]
    assert (message.subject, message.body) == ("Escalated", "Answer me.")
    assert message.from_email == "codex@example.com"
    assert message.extra_headers["X-Codex-Notification-Id"] == "n-mail"
    assert receipt["channel"] == "email"
    assert receipt["id"] == message.extra_headers["Message-ID"]
    assert receipt["id"].endswith("@example.com>")
    # Derived from the notification id: the same notification, the same id.
    assert EmailSender().send(notification)["id"] == receipt["id"]
    other = outgoing("n-mail-2", recipient="bob@example.com")
    assert EmailSender().send(other)["id"] != receipt["id"]


def test_email_without_a_subject_gets_one(settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    EmailSender().send(outgoing("n-bare", recipient="bob@example.com", subject=""))
    assert mail.outbox[0].subject == "Codex notification n-bare"


def test_a_recipient_that_is_no_address_aborts_without_sending(settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    with pytest.raises(ClassifiedFailure) as caught:
        EmailSender().send(outgoing(recipient="team-alpha"))
    assert caught.value.error.action is Action.ABORT
    assert str(caught.value.error.source) == "notify"
    assert mail.outbox == []


@pytest.mark.parametrize(
    ("error", "action"),
    [
        (
            smtplib.SMTPRecipientsRefused({"bob@example.com": (550, b"no such user")}),
            Action.ABORT,
        ),
        (smtplib.SMTPServerDisconnected("gone"), Action.WAIT_RETRY),
        (smtplib.SMTPConnectError(421, "try later"), Action.WAIT_RETRY),
        (ConnectionRefusedError(111, "Connection refused"), Action.WAIT_RETRY),
        (TimeoutError("timed out"), Action.WAIT_RETRY),
        (smtplib.SMTPDataError(451, b"local error"), Action.WAIT_RETRY),
        (smtplib.SMTPDataError(554, b"rejected"), Action.ABORT),
        (
            smtplib.SMTPAuthenticationError(535, b"bad credentials"),
            Action.MANUAL_REVIEW,
        ),
        (
            smtplib.SMTPSenderRefused(553, b"not allowed", "codex@example.com"),
            Action.MANUAL_REVIEW,
        ),
    ],
    ids=lambda value: type(value).__name__ if isinstance(value, Exception) else "",
)
def test_smtp_failures_are_classified(failing_mail, error, action):
    failing_mail.error = error
    with pytest.raises(ClassifiedFailure) as caught:
        EmailSender().send(outgoing(recipient="bob@example.com"))
    classified = caught.value.error
    assert classified.action is action
    assert classified.recoverable is action.recoverable
    assert classified.original is error


def test_a_refused_recipient_fails_the_notification_at_once(failing_mail):
    failing_mail.error = smtplib.SMTPRecipientsRefused({"bob@example.com": (550, b"")})
    notification = enqueue(recipient="bob@example.com")
    assert notification.deliver(EmailSender().send) is False
    notification.refresh_from_db()
    assert (notification.status, notification.attempts) == ("failed", 1)
    assert "recipient refused" in notification.last_error


def test_a_lost_smtp_connection_schedules_a_retry(failing_mail):
    failing_mail.error = smtplib.SMTPServerDisconnected("gone")
    notification = enqueue(recipient="bob@example.com")
    assert notification.deliver(EmailSender().send) is False
    notification.refresh_from_db()
    assert notification.status == "pending"


# -- webhook -----------------------------------------------------------------------


def test_webhook_posts_the_notification_as_json(hook, settings):
    settings.CODEX_NOTIFY_WEBHOOK_URL = f"{hook}/ok"
    notification = outgoing("n-hook", recipient="team-alpha", body="Answer me.")

    receipt = WebhookSender().send(notification)

    assert receipt == {"channel": "webhook", "id": "n-hook", "status": 200}
    (request,) = Hook.received
    assert request["headers"]["Content-Type"] == "application/json"
    assert request["headers"]["Idempotency-Key"] == "n-hook"
    assert request["json"]["notification_id"] == "n-hook"
    assert request["json"]["recipient"] == "team-alpha"
    assert request["json"]["body"] == "Answer me."
    assert request["json"]["task"] is None


def test_the_webhook_names_the_task_by_its_task_id(hook):
    task = make_task()
    notification = outgoing("n-task", task=task)

    WebhookSender(url=f"{hook}/ok").send(notification)

    (request,) = Hook.received
    assert request["json"]["task"] == task.task_id
    assert request["json"]["created_at"] == notification.created_at.isoformat()


def test_a_429_waits_as_long_as_the_server_says(hook):
    with pytest.raises(ClassifiedFailure) as caught:
        WebhookSender(url=f"{hook}/busy").send(outgoing())
    error = caught.value.error
    assert (error.code, error.action, error.retry_after) == (
        429,
        Action.WAIT_RETRY,
        120,
    )
    assert "slow down" in error.message


def test_a_500_waits_and_retries(hook):
    with pytest.raises(ClassifiedFailure) as caught:
        WebhookSender(url=f"{hook}/broken").send(outgoing())
    error = caught.value.error
    assert (error.code, error.action, error.recoverable) == (
        500,
        Action.WAIT_RETRY,
        True,
    )


def test_a_404_needs_a_person(hook):
    with pytest.raises(ClassifiedFailure) as caught:
        WebhookSender(url=f"{hook}/gone").send(outgoing())
    assert caught.value.error.action is Action.MANUAL_REVIEW


def test_a_refused_connection_waits_and_retries():
    # A port that was just free: nothing listens there any more.
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(ClassifiedFailure) as caught:
        WebhookSender(url=f"http://127.0.0.1:{port}/ok", timeout=5).send(outgoing())
    assert (caught.value.error.code, caught.value.error.action) == (
        0,
        Action.WAIT_RETRY,
    )


def test_without_a_url_the_notification_needs_a_person(settings):
    settings.CODEX_NOTIFY_WEBHOOK_URL = None
    with pytest.raises(ClassifiedFailure) as caught:
        WebhookSender().send(outgoing())
    assert caught.value.error.action is Action.MANUAL_REVIEW


def test_only_http_urls_are_opened(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("do not post me")
    with pytest.raises(ClassifiedFailure) as caught:
        WebhookSender(url=secret.as_uri()).send(outgoing())
    assert caught.value.error.action is Action.MANUAL_REVIEW


def test_a_429_from_the_webhook_postpones_the_outbox_row(hook):
    notification = enqueue()
    assert notification.deliver(WebhookSender(url=f"{hook}/busy").send) is False
    notification.refresh_from_db()
    assert notification.status == "pending"
    # The server asked for 120 s, more than the first backoff (60 s).
    wait = (notification.next_attempt_at - notification.claimed_at).total_seconds()
    assert wait >= 120
