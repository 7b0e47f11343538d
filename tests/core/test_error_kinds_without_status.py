"""Failures with no HTTP status: network errors, git rejections, content filter.

Spec 000: "`pull_retry` - Git pull then retry"; its failure_reasons example
lists "content_filter" and "timeout".
"""

from __future__ import annotations

import pytest

from codex.core.errors import NO_RESPONSE, Action, classify_kind


@pytest.mark.parametrize(
    ("source", "kind", "action", "recoverable"),
    [
        ("github", "connection", Action.WAIT_RETRY, True),
        ("claude", "timeout", Action.WAIT_RETRY, True),
        ("git", "non_fast_forward", Action.PULL_RETRY, True),
        ("git", "merge_conflict", Action.MANUAL_REVIEW, False),
        ("claude", "content_filter", Action.MANUAL_REVIEW, False),
        ("claude", "invalid_response", Action.ABORT, False),
    ],
)
def test_kind_maps_to_the_action(source, kind, action, recoverable):
    error = classify_kind(source, kind)

    assert error.code == NO_RESPONSE
    assert error.action is action
    assert error.recoverable is recoverable


def test_retry_after_is_kept_only_for_waits():
    assert classify_kind("claude", "timeout", retry_after=9).retry_after == 9
    assert classify_kind("git", "non_fast_forward", retry_after=9).retry_after is None


def test_an_unknown_kind_is_refused():
    with pytest.raises(ValueError):
        classify_kind("git", "cosmic_ray")
