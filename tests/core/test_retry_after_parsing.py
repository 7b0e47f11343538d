"""Retry-After (seconds or an HTTP date) and GitHub's x-ratelimit-reset (epoch)."""

from __future__ import annotations

import pytest

from codex.core.errors import parse_ratelimit_reset, parse_retry_after

NOW = 1_750_000_000.0  # 2025-06-15 15:06:40 UTC


@pytest.mark.parametrize(
    ("header", "seconds"),
    [
        ("60", 60),
        (" 7 ", 7),
        ("1.2", 2),  # rounded up: waiting less than asked gets limited again
        ("-5", 0),
        ("Sun, 15 Jun 2025 15:07:40 GMT", 60),
        ("Sun, 15 Jun 2025 15:00:00 GMT", 0),  # in the past
        ("soon", None),
        ("", None),
        (None, None),
    ],
)
def test_retry_after(header, seconds):
    assert parse_retry_after(header, now=NOW) == seconds


@pytest.mark.parametrize(
    ("header", "seconds"),
    [
        (str(int(NOW) + 300), 300),
        (str(int(NOW) - 10), 0),
        ("never", None),
        (None, None),
    ],
)
def test_ratelimit_reset_epoch(header, seconds):
    assert parse_ratelimit_reset(header, now=NOW) == seconds
