"""Two workers playing backlog rounds at once on PostgreSQL start each issue once
and never more tasks than the run has sessions."""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from codex.claims.jobs import play_backlog_rounds
from codex.claims.models import BacklogRun
from codex.tasks.models import Task
from tests.claims.backlog_helpers import cache_open_issues
from tests.claims.factories import make_backlog_run

pytestmark = [pytest.mark.postgresql, pytest.mark.django_db(transaction=True)]

WORKERS = 4


def test_racing_workers_respect_the_session_count():
    run = make_backlog_run(sessions=3)
    cache_open_issues(run.repository, *range(1, 11))
    barrier = threading.Barrier(WORKERS, timeout=30)
    results: list[object] = [None] * WORKERS

    def worker(index: int) -> None:
        try:
            barrier.wait()
            results[index] = play_backlog_rounds()
        except BaseException as exc:  # noqa: BLE001 - reported below
            results[index] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(WORKERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)

    assert all(isinstance(result, int) for result in results), results
    # Whoever came second found the row locked (skipped) or every session busy.
    assert sum(results) == 1
    issues = sorted(Task.objects.values_list("issue_number", flat=True))
    assert issues == [1, 2, 3]
    run = BacklogRun.objects.get(pk=run.pk)
    assert (run.rounds, run.tasks.count()) == (1, 3)
