"""The same delivery arriving twice at once, on real PostgreSQL: the unique
delivery_id is the only dedupe the ack has (no SELECT first), so the second
INSERT must wait for the first and then answer 200, with one row and one job."""

from __future__ import annotations

import json
import threading

import pytest
from django.db import connection
from django.test import Client

from codex.webhooks.models import WebhookDelivery
from codex.webhooks.signature import sign
from tests.webhooks.conftest import SECRET, URL, load

pytestmark = [pytest.mark.postgresql, pytest.mark.django_db(transaction=True)]

COPIES = 4
TIMEOUT = 30


def test_one_delivery_sent_four_times_at_once_is_stored_and_queued_once(enqueued):
    body = load("issues", "labeled.payload.json")
    raw = json.dumps(body).encode()
    barrier = threading.Barrier(COPIES, timeout=TIMEOUT)
    statuses: list[object] = [None] * COPIES

    def send(index: int) -> None:
        try:
            barrier.wait()
            statuses[index] = (
                Client()
                .post(
                    URL,
                    data=raw,
                    content_type="application/json",
                    HTTP_X_GITHUB_EVENT="issues",
                    HTTP_X_GITHUB_DELIVERY="raced-delivery",
                    HTTP_X_HUB_SIGNATURE_256=sign(raw, SECRET),
                )
                .status_code
            )
        except BaseException as exc:  # noqa: BLE001 - reported to the test
            statuses[index] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=send, args=(i,)) for i in range(COPIES)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(TIMEOUT * 2)
    assert sorted(statuses) == [200] * (COPIES - 1) + [202]
    delivery = WebhookDelivery.objects.get()
    assert enqueued == [("codex.webhooks.jobs.process_delivery", delivery.pk)]
