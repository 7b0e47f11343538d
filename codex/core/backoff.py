"""How long to wait before trying again: one formula for every retry and poll.

A task's retry after a transient failure (docs/domain/tasks.md#retries), a
notification's next send (docs/domain/notifications.md#notification-outbox), a
worker polling for the database and a git waiting for a repository's lock all
wait `base` × 2^attempt seconds, at most `cap`. Waits that many callers may
start at the same moment take jitter: a random share between half and all of
the wait, so that failures that happened together do not retry together.
"""

from __future__ import annotations

import random

# The exponent stops growing here (a million times the base): past it every
# sane cap has long been reached, and a float cannot overflow however many
# attempts a caller counts.
MAX_DOUBLINGS = 20


def backoff_seconds(
    attempt: int,
    *,
    base: float,
    cap: float,
    jitter: bool = True,
    rng: random.Random | None = None,
) -> float:
    """Seconds to wait before retry number `attempt` (0 for the first):
    min(cap, base × 2^attempt), a negative attempt counting as 0.

    With `jitter` the wait is drawn uniformly between half and all of that,
    from `rng` when given (a seeded `random.Random` makes it repeatable), else
    from the `random` module. Without jitter the result is exact.
    """
    exponent = min(max(attempt, 0), MAX_DOUBLINGS)
    delay = min(cap, base * 2**exponent)
    if not jitter:
        return delay
    return (rng or random).uniform(delay / 2, delay)
