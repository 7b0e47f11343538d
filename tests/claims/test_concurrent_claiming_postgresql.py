"""16 concurrent claimers on 1,000 issues never double-claim (PostgreSQL only:
FOR UPDATE SKIP LOCKED and the conditional UPDATE under real concurrency)."""

from __future__ import annotations

import threading
from collections import Counter

import pytest

pytestmark = [
    pytest.mark.postgresql,
    pytest.mark.django_db(transaction=True),
]

CLAIMERS = 16
ISSUES = 1000
TIMEOUT = 120


def test_16_claimers_on_1000_issues_claim_each_exactly_once():
    from django.db import connection

    from codex.claims.models import ClaimState, IssueClaim
    from codex.events.models import Event, EventKind
    from tests.factories import make_repository

    repository = make_repository()
    IssueClaim.objects.bulk_create(
        IssueClaim(repository=repository, number=n) for n in range(1, ISSUES + 1)
    )
    barrier = threading.Barrier(CLAIMERS, timeout=30)
    taken: dict[int, list[int]] = {}
    errors: list[BaseException] = []

    def claimer(index: int) -> None:
        mine: list[int] = []
        try:
            barrier.wait()
            while True:
                claims = IssueClaim.objects.claim_next(repository, f"session_{index}")
                if not claims:
                    break
                mine += [claim.number for claim in claims]
        except BaseException as exc:  # noqa: BLE001 - reported to the test
            errors.append(exc)
        finally:
            taken[index] = mine
            connection.close()

    threads = [threading.Thread(target=claimer, args=(i,)) for i in range(CLAIMERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(TIMEOUT)

    assert not any(thread.is_alive() for thread in threads), "a claimer hung"
    assert errors == []
    numbers = Counter(n for mine in taken.values() for n in mine)
    assert sum(numbers.values()) == ISSUES
    assert max(numbers.values()) == 1, "an issue was claimed twice"
    assert set(numbers) == set(range(1, ISSUES + 1))
    assert sum(1 for mine in taken.values() if mine) > 1, "no concurrency happened"
    rows = IssueClaim.objects.filter(repository=repository)
    assert rows.filter(state=ClaimState.CLAIMED, total_attempts=1).count() == ISSUES
    for index, mine in taken.items():
        assert set(
            rows.filter(claimed_by=f"session_{index}").values_list("number", flat=True)
        ) == set(mine)
    assert Event.objects.filter(kind=EventKind.CLAIM).count() == ISSUES
