"""Concurrent POSTs with one Idempotency-Key on PostgreSQL: one acts, the others
replay its answer (the claim is the record's INSERT; the losers' INSERTs wait
for the winner's commit, then fail and read its answer)."""

from __future__ import annotations

import pytest

from codex.core.api.idempotency_record import IdempotencyRecord
from codex.tasks.models import Task
from tests.core.api.conftest import token_client
from tests.core.store.test_concurrency_postgresql import run_together, split
from tests.factories import make_repository, make_user

pytestmark = [pytest.mark.postgresql, pytest.mark.django_db(transaction=True)]

BODY = {"repository": "https://github.com/acme/shop", "title": "Add a wish list"}


def test_one_key_sent_four_times_at_once_creates_one_task(settings):
    settings.CODEX_RUN_JOBS_INLINE = False
    make_repository(BODY["repository"])
    user = make_user()
    clients = [token_client(user) for _ in range(4)]

    def send(client):
        def run(barrier):
            barrier.wait()
            response = client.post(
                "/api/tasks/", BODY, format="json", headers={"Idempotency-Key": "k"}
            )
            return response.status_code, response.json()["task_id"]

        return run

    answers, errors = split(run_together([send(client) for client in clients]))
    assert not errors
    assert sorted(status for status, _ in answers) == [200, 200, 200, 201]
    assert len({task_id for _, task_id in answers}) == 1
    assert Task.objects.count() == 1
    assert IdempotencyRecord.objects.count() == 1
