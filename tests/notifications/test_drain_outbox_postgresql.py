"""Two workers draining the outbox at once on PostgreSQL send everything once."""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from codex.notifications.jobs import drain_outbox
from codex.notifications.models import Notification
from tests.notifications.factories import enqueue
from tests.notifications.recording_sender import RecordingSender

pytestmark = [pytest.mark.postgresql, pytest.mark.django_db(transaction=True)]

WORKERS = 2
NOTIFICATIONS = 20


def test_two_draining_workers_send_each_notification_once(settings):
    settings.CODEX_NOTIFY_SENDER = (
        "tests.notifications.recording_sender.RecordingSender"
    )
    RecordingSender.reset()
    for index in range(NOTIFICATIONS):
        enqueue(f"n-{index}")
    barrier = threading.Barrier(WORKERS, timeout=30)
    results: list[object] = [None] * WORKERS

    def worker(index: int) -> None:
        try:
            barrier.wait()
            results[index] = drain_outbox()
        except BaseException as exc:  # noqa: BLE001 - reported below
            results[index] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(WORKERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)

    assert all(isinstance(result, dict) for result in results), results
    assert sum(result["sent"] for result in results) == NOTIFICATIONS
    assert sorted(RecordingSender.sent) == sorted(
        f"n-{i}" for i in range(NOTIFICATIONS)
    )
    assert set(Notification.objects.values_list("status", flat=True)) == {"sent"}
    assert set(Notification.objects.values_list("attempts", flat=True)) == {1}
    RecordingSender.reset()
