"""Real concurrent callers on PostgreSQL: one fetch, everybody gets its token."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection

from codex.github.models import GitHubToken
from tests.configuration.factories import KEY_A

pytestmark = [pytest.mark.postgresql, pytest.mark.django_db(transaction=True)]

CALLERS = 4


def test_concurrent_callers_fetch_once_and_share_the_token(settings):
    settings.CODEX_FERNET_KEYS = KEY_A
    GitHubToken.objects.create(name="default")
    calls = []
    barrier = threading.Barrier(CALLERS, timeout=30)
    results: list[object] = [None] * CALLERS

    def fetch() -> tuple[str, datetime]:
        calls.append(1)
        time.sleep(0.3)  # GitHub is slow; the others must wait, not fetch
        return "ghs_shared_token_value_0001", datetime.now(UTC) + timedelta(hours=1)

    def caller(index: int) -> None:
        try:
            barrier.wait()
            results[index] = GitHubToken.get_or_refresh(
                fetch, attempts=50, backoff_seconds=0.05
            )
        except BaseException as exc:  # noqa: BLE001 - reported below
            results[index] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=caller, args=(i,)) for i in range(CALLERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)

    assert results == ["ghs_shared_token_value_0001"] * CALLERS
    assert len(calls) == 1
