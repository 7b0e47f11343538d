"""A sender for outbox tests, installed through CODEX_NOTIFY_SENDER."""

from __future__ import annotations

import threading
from typing import Any, ClassVar

from codex.core.errors import ClassifiedFailure


class RecordingSender:
    """Records every notification id it is asked to send (across instances and
    threads); raises `failures[notification_id]` instead when one is set."""

    sent: ClassVar[list[str]] = []
    failures: ClassVar[dict[str, ClassifiedFailure]] = {}
    _lock = threading.Lock()

    @classmethod
    def reset(cls) -> None:
        """Forget what was sent and the scripted failures."""
        cls.sent = []
        cls.failures = {}

    def send(self, notification) -> dict[str, Any]:
        """Record the id (or raise the scripted failure); returns a receipt."""
        failure = self.failures.get(notification.notification_id)
        if failure is not None:
            raise failure
        with self._lock:
            self.sent.append(notification.notification_id)
        return {"channel": "test", "id": notification.notification_id}
