"""Figure 8: 16 concurrent claimers over 1,000 issues (claim_next)."""

from __future__ import annotations

import threading
import time
from collections import Counter

from bench.common import figure

CLAIMERS = 16


def run(smoke: bool) -> list[dict]:
    from django.db import connection

    from codex.claims.models import IssueClaim
    from codex.repositories.models import Repository

    issues = 200 if smoke else 1000
    repository, _ = Repository.objects.get_or_create(
        url="https://github.com/bench/claims"
    )
    IssueClaim.objects.bulk_create(
        IssueClaim(repository=repository, number=n) for n in range(1, issues + 1)
    )
    barrier = threading.Barrier(CLAIMERS + 1, timeout=60)
    taken: dict[int, list[int]] = {}
    errors: list[BaseException] = []

    def claimer(index: int) -> None:
        mine: list[int] = []
        try:
            IssueClaim.objects.filter(pk=0).exists()  # connect before the start line
            barrier.wait()
            while True:
                claims = IssueClaim.objects.claim_next(repository, f"bench_{index}")
                if not claims:
                    break
                mine += [claim.number for claim in claims]
        except BaseException as exc:  # noqa: BLE001 - reported
            errors.append(exc)
        finally:
            taken[index] = mine
            connection.close()

    threads = [threading.Thread(target=claimer, args=(i,)) for i in range(CLAIMERS)]
    for thread in threads:
        thread.start()
    barrier.wait()
    start = time.perf_counter()
    for thread in threads:
        thread.join(300)
    elapsed = time.perf_counter() - start
    numbers = Counter(n for mine in taken.values() for n in mine)
    total = sum(numbers.values())
    doubles = sum(count - 1 for count in numbers.values() if count > 1)
    missing = issues - len(numbers)
    rate = total / elapsed
    return [
        figure(
            "claims_per_second",
            rate,
            "claims/s",
            goal="reported (no ceiling in the issue)",
            meets=not errors and missing == 0,
            notes=f"{CLAIMERS} threads, one connection each, {issues} issues; "
            f"{len(errors)} errors, {missing} issues left unclaimed"
            + (f"; first error: {errors[0]!r}" if errors else ""),
        ),
        figure(
            "double_claims",
            doubles,
            "claims",
            goal="== 0",
            meets=doubles == 0 and not errors,
            notes=f"over {total} claims by {CLAIMERS} concurrent claimers",
        ),
    ]
