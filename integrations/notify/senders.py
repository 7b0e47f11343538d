"""Notification senders: log, e-mail and webhook channels (Teams and Slack in
`chat`).

A sender delivers one `OutgoingMessage` (plain data: the outbox builds it from
its row and records the outcome itself) and returns a receipt, or raises a
`ClassifiedFailure` (source "notify") saying what the outbox should do next:
wait_retry (the outbox backs off, honouring retry_after), or manual_review /
abort (the outbox fails the notification at once; an operator may retry it).
The outbox guarantees at most one `send` per claimed row; senders add what the
receiving side needs to deduplicate on its own (a stable Message-ID, an
Idempotency-Key header).
"""

from __future__ import annotations

import hashlib
import json
import logging
import smtplib
import urllib.error
import urllib.request
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol, runtime_checkable
from urllib.parse import urlsplit

from django.conf import settings
from django.core.mail import BadHeaderError, EmailMessage
from django.utils.module_loading import import_string

from codex.core.errors import (
    NO_RESPONSE,
    Action,
    ClassifiedFailure,
    ErrorKind,
    Source,
    classify_http,
    classify_kind,
    make_error,
)

logger = logging.getLogger(__name__)

SOURCE = Source.NOTIFY
# Ten seconds: long enough for a slow chat webhook, short enough that one
# hung endpoint does not hold a worker for the whole outbox drain.
DEFAULT_WEBHOOK_TIMEOUT_SECONDS = 10
# How much of an error response body is kept in the classified message.
ERROR_BODY_CHARS = 500


@dataclass(frozen=True, kw_only=True)
class OutgoingMessage:
    """One notification to deliver, as plain data."""

    notification_id: str
    channel: str
    recipient: str
    created_at: datetime
    subject: str = ""
    body: str = ""
    # The task it is about (its task id), if any.
    task_id: str | None = None


@runtime_checkable
class Sender(Protocol):
    """A notification channel: `send` delivers one notification."""

    def send(self, notification: OutgoingMessage) -> dict[str, Any]:
        """Deliver `notification`; return a receipt such as {"channel", "id"}.

        Raises ClassifiedFailure (source notify) when it was not delivered.
        """
        ...


# The sender of each channel a notification can name (configuration
# notify.channels chooses which ones Codex announces to).
CHANNEL_SENDERS = {
    "log": "integrations.notify.senders.LogSender",
    "email": "integrations.notify.senders.EmailSender",
    "webhook": "integrations.notify.senders.WebhookSender",
    "teams": "integrations.notify.chat.TeamsSender",
    "slack": "integrations.notify.chat.SlackSender",
}


def get_sender(channel: str | None = None, *, url: str | None = None) -> Sender:
    """The sender for a notification of `channel`: settings.CODEX_NOTIFY_SENDER
    (a dotted class path, instantiated with no arguments) when set, which then
    carries every channel (development, tests); else the channel's own sender,
    given `url` when its caller has one (a chat channel's webhook URL is a
    secret its caller keeps); else (a channel no sender knows) the log."""
    override = getattr(settings, "CODEX_NOTIFY_SENDER", "")
    if override:
        return import_string(override)()
    sender_class = import_string(
        CHANNEL_SENDERS.get(channel or "log", CHANNEL_SENDERS["log"])
    )
    return sender_class(url=url) if url else sender_class()


def _failure(
    action: Action,
    message: str,
    original: BaseException | None = None,
    *,
    retry_after: int | None = None,
) -> ClassifiedFailure:
    return ClassifiedFailure(
        make_error(
            SOURCE,
            NO_RESPONSE,
            action,
            message,
            retry_after=retry_after,
            original=original,
        )
    )


class LogSender:
    """Development channel: writes the notification to the log at INFO."""

    channel = "log"

    def send(self, notification: OutgoingMessage) -> dict[str, Any]:
        """Log the notification; never fails."""
        logger.info(
            "notification %s to %s via %s: %s\n%s",
            notification.notification_id,
            notification.recipient,
            notification.channel,
            notification.subject,
            notification.body,
        )
        return {"channel": self.channel, "id": notification.notification_id}


def message_id(notification: OutgoingMessage, from_email: str) -> str:
    """A Message-ID derived from the notification id, so that a mail system
    that somehow sees the same notification twice can tell it is one message."""
    digest = hashlib.sha256(notification.notification_id.encode()).hexdigest()[:32]
    domain = from_email.rpartition("@")[2].strip("<> ") or "codex.localhost"
    return f"<notification.{digest}@{domain}>"


class EmailSender:
    """E-mail through Django's mail backend (EMAIL_BACKEND, EMAIL_HOST, ...) to
    the notification's recipient.

    SMTP failures are classified: the server unreachable, disconnecting or
    answering 4xx (temporary) → wait_retry; the recipient refused or a 5xx
    answer → abort (sending the same message again is refused again); our own
    sender address or credentials refused → manual_review (a person must fix
    the configuration).
    """

    channel = "email"

    def __init__(self, from_email: str | None = None) -> None:
        self.from_email = (
            from_email
            or getattr(settings, "CODEX_NOTIFY_EMAIL_FROM", None)
            or settings.DEFAULT_FROM_EMAIL
        )

    def send(self, notification: OutgoingMessage) -> dict[str, Any]:
        """Send one e-mail; returns {"channel": "email", "id": Message-ID}."""
        recipient = notification.recipient.strip()
        if "@" not in recipient:
            raise _failure(Action.ABORT, f"not an e-mail address: {recipient!r}")
        msgid = message_id(notification, self.from_email)
        # EmailMessage rather than send_mail: the same backend call, plus the
        # headers that let the receiving side deduplicate.
        email = EmailMessage(
            subject=notification.subject
            or f"Codex notification {notification.notification_id}",
            body=notification.body,
            from_email=self.from_email,
            to=[recipient],
            headers={
                "Message-ID": msgid,
                "X-Codex-Notification-Id": notification.notification_id,
            },
        )
        try:
            email.send(fail_silently=False)
        except Exception as exc:  # noqa: BLE001 - classified, then re-raised
            raise classify_smtp(exc) from exc
        return {"channel": self.channel, "id": msgid}


def classify_smtp(exc: BaseException) -> ClassifiedFailure:
    """The outbox's view of an exception raised while sending e-mail."""
    if isinstance(exc, BadHeaderError):
        return _failure(Action.ABORT, f"unusable e-mail header: {exc}", exc)
    if isinstance(exc, smtplib.SMTPRecipientsRefused):
        return _failure(Action.ABORT, f"recipient refused: {exc.recipients}", exc)
    if isinstance(exc, smtplib.SMTPSenderRefused):
        return _failure(
            Action.MANUAL_REVIEW, f"sender address refused: {exc.sender}", exc
        )
    if isinstance(exc, smtplib.SMTPAuthenticationError):
        return _failure(Action.MANUAL_REVIEW, "SMTP authentication failed", exc)
    if isinstance(exc, smtplib.SMTPServerDisconnected | smtplib.SMTPConnectError):
        return ClassifiedFailure(
            classify_kind(SOURCE, ErrorKind.CONNECTION, message=str(exc), original=exc)
        )
    if isinstance(exc, smtplib.SMTPResponseException):
        # RFC 5321: 4yz is a transient failure, 5yz a permanent one.
        transient = 400 <= exc.smtp_code < 500
        return _failure(
            Action.WAIT_RETRY if transient else Action.ABORT,
            f"SMTP {exc.smtp_code}: {exc.smtp_error!r}",
            exc,
        )
    if isinstance(exc, TimeoutError):
        return ClassifiedFailure(
            classify_kind(SOURCE, ErrorKind.TIMEOUT, message=str(exc), original=exc)
        )
    if isinstance(exc, OSError | smtplib.SMTPException):
        # Refused connections, DNS failures and other SMTP protocol hiccups.
        return ClassifiedFailure(
            classify_kind(SOURCE, ErrorKind.CONNECTION, message=str(exc), original=exc)
        )
    return _failure(Action.ABORT, f"{type(exc).__name__}: {exc}", exc)


class WebhookSender:
    """POSTs the notification as JSON to CODEX_NOTIFY_WEBHOOK_URL.

    The request carries an `Idempotency-Key` header (the notification id) so the
    receiver can drop a duplicate. HTTP errors are classified with
    `classify_http` (429 and 5xx wait, honouring Retry-After; most 4xx abort);
    timeouts and refused connections wait and retry.
    """

    channel = "webhook"
    # What an operator sets to give this channel its URL (named in the error).
    url_source = "CODEX_NOTIFY_WEBHOOK_URL"

    def __init__(self, url: str | None = None, timeout: float | None = None) -> None:
        self.url = url or self.configured_url()
        self.timeout = timeout or getattr(
            settings, "CODEX_NOTIFY_WEBHOOK_TIMEOUT", DEFAULT_WEBHOOK_TIMEOUT_SECONDS
        )

    def configured_url(self) -> str | None:
        """The URL the settings give this channel."""
        return getattr(settings, "CODEX_NOTIFY_WEBHOOK_URL", None)

    def payload(self, notification: OutgoingMessage) -> dict[str, Any]:
        """The JSON document the webhook receives."""
        return {
            "notification_id": notification.notification_id,
            "channel": notification.channel,
            "recipient": notification.recipient,
            "subject": notification.subject,
            "body": notification.body,
            "task": notification.task_id,
            "created_at": notification.created_at.isoformat(),
        }

    def send(self, notification: OutgoingMessage) -> dict[str, Any]:
        """POST once; returns {"channel": "webhook", "id": ..., "status": ...}."""
        if not self.url:
            raise _failure(Action.MANUAL_REVIEW, f"{self.url_source} is not configured")
        # urllib also opens file:// and ftp:// URLs; a misconfigured setting must
        # not turn the outbox into a file reader.
        if urlsplit(self.url).scheme not in ("http", "https"):
            raise _failure(Action.MANUAL_REVIEW, "the webhook URL must be http(s)")
        request = urllib.request.Request(
            self.url,
            data=json.dumps(self.payload(notification)).encode(),
            method="POST",
            headers={
                "Content-Type": "application/json",
                "Idempotency-Key": notification.notification_id,
                "User-Agent": "Codex-Notify/1",
            },
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                status = response.status
        except urllib.error.HTTPError as exc:
            raise ClassifiedFailure(
                classify_http(
                    SOURCE,
                    exc.code,
                    headers=dict(exc.headers.items()) if exc.headers else None,
                    body=_error_body(exc),
                    original=exc,
                )
            ) from exc
        except urllib.error.URLError as exc:
            kind = (
                ErrorKind.TIMEOUT
                if isinstance(exc.reason, TimeoutError)
                else ErrorKind.CONNECTION
            )
            raise ClassifiedFailure(
                classify_kind(SOURCE, kind, message=str(exc.reason), original=exc)
            ) from exc
        except TimeoutError as exc:  # the response read timed out
            raise ClassifiedFailure(
                classify_kind(SOURCE, ErrorKind.TIMEOUT, original=exc)
            ) from exc
        except OSError as exc:  # connection reset mid-response and the like
            raise ClassifiedFailure(
                classify_kind(
                    SOURCE, ErrorKind.CONNECTION, message=str(exc), original=exc
                )
            ) from exc
        return {
            "channel": self.channel,
            "id": notification.notification_id,
            "status": status,
        }


def _error_body(exc: urllib.error.HTTPError) -> Any:
    """The error response's JSON, or its text, for the classified message."""
    try:
        raw = exc.read(ERROR_BODY_CHARS * 4)
    except OSError:
        return None
    text = raw.decode("utf-8", "replace")
    try:
        return json.loads(text)
    except ValueError:
        return text[:ERROR_BODY_CHARS]
