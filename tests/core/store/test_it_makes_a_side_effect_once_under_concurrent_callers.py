"""Two callers of perform_once for the same key at the same moment (a job
not under a task's lease: the progress comment's) make the effect once: the
second waits for the first and gets its stored result."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection

from codex.core.store.side_effects import perform_once

pytestmark = pytest.mark.django_db(transaction=True)


def test_concurrent_callers_make_the_effect_once():
    made: list[int] = []
    results: list[dict] = []
    start = threading.Barrier(3)

    def effect() -> dict:
        made.append(1)
        time.sleep(0.5)  # long enough for the other caller to arrive
        return {"id": 41}

    def caller() -> None:
        try:
            start.wait()
            results.append(perform_once("test:comment:1", effect, lookup=lambda: None))
        finally:
            connection.close()

    threads = [threading.Thread(target=caller) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert len(made) == 1
    assert results == [{"id": 41}] * 3
