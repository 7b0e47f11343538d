"""Real concurrent workers on PostgreSQL deliver one notification exactly once."""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from codex.notifications.models import Notification
from tests.notifications.factories import enqueue

pytestmark = [pytest.mark.postgresql, pytest.mark.django_db(transaction=True)]

WORKERS = 6


def test_racing_workers_send_once():
    notification = enqueue()
    sent: list[int] = []
    barrier = threading.Barrier(WORKERS, timeout=30)
    results: list[object] = [None] * WORKERS

    def worker(index: int) -> None:
        try:
            mine = Notification.objects.get(pk=notification.pk)
            barrier.wait()
            results[index] = mine.deliver(lambda _n: sent.append(index))
        except BaseException as exc:  # noqa: BLE001 - reported below
            results[index] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(WORKERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)

    assert sorted(results, key=str) == [False] * (WORKERS - 1) + [True]
    assert len(sent) == 1
    assert Notification.objects.get().status == "sent"
