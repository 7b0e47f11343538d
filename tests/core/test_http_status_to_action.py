"""Spec 000 §4: every HTTP failure is classified into one of five actions.

Spec 000: "`rotate_token` - Try a different API token", "`wait_retry` - Wait and
retry (use retry_after)", "`pull_retry` - Git pull then retry", "`manual_review` -
Mark for human intervention", "`abort` - Stop processing, non-recoverable".
The spec gives no status table; this is the one codex.core.errors.HTTP_ACTIONS
implements.
"""

from __future__ import annotations

import pytest

from codex.core.errors import Action, classify_http

NOW = 1_750_000_000.0

CASES = [
    # (status, headers, body, action, recoverable, retry_after)
    (400, {}, None, Action.ABORT, False, None),
    (401, {}, None, Action.ROTATE_TOKEN, True, None),
    (
        403,
        {},
        {"message": "Resource not accessible by integration"},
        Action.MANUAL_REVIEW,
        False,
        None,
    ),
    (
        403,
        {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(int(NOW) + 120)},
        {"message": "API rate limit exceeded"},
        Action.WAIT_RETRY,
        True,
        120,
    ),
    (
        403,
        {"Retry-After": "30"},
        {"message": "secondary rate limit"},
        Action.WAIT_RETRY,
        True,
        30,
    ),
    (
        403,
        {},
        {"message": "You have exceeded a secondary rate limit"},
        Action.WAIT_RETRY,
        True,
        60,
    ),
    (404, {}, {"message": "Not Found"}, Action.MANUAL_REVIEW, False, None),
    (408, {}, None, Action.WAIT_RETRY, True, None),
    (409, {}, {"message": "Head branch was modified"}, Action.PULL_RETRY, True, None),
    (413, {}, None, Action.ABORT, False, None),
    (422, {}, {"message": "Validation Failed"}, Action.MANUAL_REVIEW, False, None),
    (429, {"retry-after": "17"}, None, Action.WAIT_RETRY, True, 17),
    (429, {"x-ratelimit-reset": str(int(NOW) + 45)}, None, Action.WAIT_RETRY, True, 45),
    (429, {}, None, Action.WAIT_RETRY, True, 60),
    (500, {}, None, Action.WAIT_RETRY, True, None),
    (502, {}, None, Action.WAIT_RETRY, True, None),
    (503, {"Retry-After": "5"}, None, Action.WAIT_RETRY, True, 5),
    (504, {}, None, Action.WAIT_RETRY, True, None),
    (
        529,
        {"retry-after": "3"},
        {"error": {"type": "overloaded_error"}},
        Action.WAIT_RETRY,
        True,
        3,
    ),
    (418, {}, None, Action.ABORT, False, None),  # any other 4xx
    (599, {}, None, Action.WAIT_RETRY, True, None),  # any other 5xx
]


@pytest.mark.parametrize(
    ("status", "headers", "body", "action", "recoverable", "retry_after"), CASES
)
def test_status_maps_to_the_action(
    status, headers, body, action, recoverable, retry_after
):
    error = classify_http("github", status, headers=headers, body=body, now=NOW)

    assert error.code == status
    assert error.action is action
    assert error.recoverable is recoverable
    assert error.retry_after == retry_after


def test_the_spec_example_429_is_reproduced_exactly():
    # Spec 000: APIError(source="github", code=429, message="Rate limited -
    # waiting", recoverable=True, action="wait_retry", retry_after=60)
    error = classify_http("github", 429, headers={"Retry-After": "60"})

    assert error.as_dict() == {
        "source": "github",
        "code": 429,
        "message": "Rate limited - waiting",
        "recoverable": True,
        "action": "wait_retry",
        "retry_after": 60,
        "original_error": None,
    }


def test_the_server_message_is_kept_in_the_message():
    error = classify_http("claude", 400, body={"error": {"message": "bad model"}})

    assert error.source == "claude"
    assert error.message.endswith(": bad model")


def test_an_unknown_source_is_refused():
    with pytest.raises(ValueError):
        classify_http("gitlab", 500)
