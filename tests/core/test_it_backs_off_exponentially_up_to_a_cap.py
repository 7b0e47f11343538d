"""codex.core.backoff: base × 2^attempt seconds, at most the cap; with jitter a
random share between half and all of it, repeatable with a seeded generator."""

from __future__ import annotations

import random

from codex.core.backoff import MAX_DOUBLINGS, backoff_seconds


def test_it_doubles_from_the_base_up_to_the_cap():
    waits = [backoff_seconds(n, base=30, cap=600, jitter=False) for n in range(7)]
    assert waits == [30, 60, 120, 240, 480, 600, 600]


def test_a_negative_attempt_waits_the_base():
    assert backoff_seconds(-3, base=60, cap=3600, jitter=False) == 60


def test_a_huge_attempt_count_neither_overflows_nor_passes_the_cap():
    assert backoff_seconds(10**6, base=0.5, cap=5.0, jitter=False) == 5.0
    # Past MAX_DOUBLINGS the wait stops growing even when the cap is higher.
    unbounded = float("inf")
    assert backoff_seconds(10**6, base=1, cap=unbounded, jitter=False) == (
        2**MAX_DOUBLINGS
    )


def test_jitter_draws_between_half_and_all_of_the_wait():
    draws = {backoff_seconds(3, base=30, cap=600) for _ in range(200)}
    assert all(120 <= wait <= 240 for wait in draws)
    assert len(draws) > 1, "jitter spreads the retries"


def test_a_seeded_generator_makes_the_jitter_repeatable():
    first = [backoff_seconds(n, base=1, cap=60, rng=random.Random(7)) for n in range(5)]
    again = [backoff_seconds(n, base=1, cap=60, rng=random.Random(7)) for n in range(5)]
    assert first == again
    assert first != [backoff_seconds(n, base=1, cap=60, jitter=False) for n in range(5)]
