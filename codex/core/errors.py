"""The one classified error (docs/domain/concurrency.md#error-classification), and
how HTTP failures map to it.

Every integration (GitHub, Claude, git, notification channels) turns its outside
system's failures into a `ClassifiedError`: source, code, message, recoverable,
action, retry_after and the original error. Workers decide what to do from
`action` alone:

- rotate_token  - try a different API token
- wait_retry    - wait `retry_after` seconds (None: the caller's backoff) and retry
- pull_retry    - git pull, then retry
- manual_review - mark for human intervention (escalate)
- abort         - stop processing, non-recoverable (fail)

`HTTP_ACTIONS` below is the table from status to action, derived from the
meaning of each action; docs/domain/concurrency.md#error-classification tells it.

`ClassifiedError` is a frozen dataclass (a value: compare it, log it, store
`as_dict()` in a task's errors); raising it goes through `ClassifiedFailure`,
an ordinary exception that holds one. Making the dataclass itself an exception
would fight Python: the interpreter and tools set attributes on exceptions
(`__notes__`, `__traceback__`), which a frozen dataclass refuses.
"""

from __future__ import annotations

import enum
import math
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from email.utils import parsedate_to_datetime
from typing import Any, NoReturn

# A rate limit without a usable header waits 60 seconds, GitHub's documented
# minimum wait for secondary rate limits.
DEFAULT_RATE_LIMIT_WAIT = 60

# Anthropic's "overloaded" status; not in the HTTP standard but a 5xx all the same.
OVERLOADED = 529

NO_RESPONSE = 0  # `code` when no HTTP response arrived (network errors, git)


class Action(enum.StrEnum):
    """The recovery actions (docs/domain/concurrency.md#error-classification)."""

    ROTATE_TOKEN = "rotate_token"
    WAIT_RETRY = "wait_retry"
    PULL_RETRY = "pull_retry"
    MANUAL_REVIEW = "manual_review"
    ABORT = "abort"

    @property
    def recoverable(self) -> bool:
        """Whether a worker can recover without a person (`recoverable`)."""
        return self in (Action.ROTATE_TOKEN, Action.WAIT_RETRY, Action.PULL_RETRY)


class Source(enum.StrEnum):
    """Who failed: one of the outside systems Codex talks to
    (docs/architecture.md#integrations)."""

    CLAUDE = "claude"
    GITHUB = "github"
    GIT = "git"
    NOTIFY = "notify"


class ErrorKind(enum.StrEnum):
    """Failures that carry no HTTP status."""

    CONNECTION = "connection"
    TIMEOUT = "timeout"
    NON_FAST_FORWARD = "non_fast_forward"
    MERGE_CONFLICT = "merge_conflict"
    CONTENT_FILTER = "content_filter"
    INVALID_RESPONSE = "invalid_response"


@dataclass(frozen=True)
class ClassifiedError:
    """One classified failure of an outside system
    (docs/domain/concurrency.md#error-classification).

    `original` is the exception that was classified; it is kept for tracebacks
    and logs and left out of equality, so two classifications of the same failure
    compare equal.
    """

    source: Source
    code: int
    message: str
    recoverable: bool
    action: Action
    retry_after: int | None = None
    original: BaseException | None = field(default=None, compare=False, repr=False)

    @property
    def original_error(self) -> str | None:
        """The original exception's message (`original_error`)."""
        return None if self.original is None else str(self.original)

    def as_dict(self) -> dict[str, Any]:
        """The documented fields as JSON-ready data, for a task's errors or an
        event."""
        data = asdict(self)
        data.pop("original")
        data["source"] = str(self.source)
        data["action"] = str(self.action)
        data["original_error"] = self.original_error
        return data

    def exception(self) -> ClassifiedFailure:
        """This error as something to raise."""
        return ClassifiedFailure(self)

    def raise_(self) -> NoReturn:
        """Raise this error, chained to the original exception when there is one."""
        raise self.exception() from self.original

    def __str__(self) -> str:
        wait = f", retry after {self.retry_after}s" if self.retry_after else ""
        return f"{self.source} {self.code}: {self.message} [{self.action}{wait}]"


class ClassifiedFailure(Exception):
    """The raisable form of a ClassifiedError; `error` holds the value."""

    def __init__(self, error: ClassifiedError) -> None:
        self.error = error
        super().__init__(str(error))

    def __getattr__(self, name: str) -> Any:
        # Let `failure.action` read like `failure.error.action`. `error` itself
        # is excluded, or a half-built instance (unpickling) would recurse.
        if name == "error":
            raise AttributeError(name)
        return getattr(self.error, name)

    def __reduce__(self):
        return (type(self), (self.error,))


def make_error(
    source: str,
    code: int,
    action: Action,
    message: str,
    *,
    retry_after: int | None = None,
    original: BaseException | None = None,
) -> ClassifiedError:
    """A ClassifiedError whose `recoverable` follows from its action."""
    return ClassifiedError(
        source=Source(source),
        code=code,
        message=message,
        recoverable=action.recoverable,
        action=action,
        retry_after=retry_after,
        original=original,
    )


# -- HTTP -------------------------------------------------------------------

# status → (action, message). 403 and 429 are decided by headers (see
# classify_http); statuses not listed fall back by class: other 4xx abort
# (our request is wrong and repeating it cannot help), other 5xx wait_retry.
HTTP_ACTIONS: dict[int, tuple[Action, str]] = {
    400: (Action.ABORT, "Bad request"),
    401: (Action.ROTATE_TOKEN, "Authentication failed - trying another token"),
    403: (Action.MANUAL_REVIEW, "Permission denied - needs a person to grant access"),
    # GitHub answers 404 for what the token may not see as well as for what does
    # not exist; either way a person has to check the reference or the access.
    404: (Action.MANUAL_REVIEW, "Not found (or not visible to this token)"),
    408: (Action.WAIT_RETRY, "Request timed out - waiting"),
    # 409: the ref or resource moved under us (e.g. "Head branch was modified").
    409: (Action.PULL_RETRY, "Conflict - pulling the latest state, then retrying"),
    413: (Action.ABORT, "Request too large"),
    # 422: understood but refused (validation, branch protection, PR exists).
    422: (Action.MANUAL_REVIEW, "Unprocessable - refused by the server's rules"),
    429: (Action.WAIT_RETRY, "Rate limited - waiting"),
    500: (Action.WAIT_RETRY, "Server error - waiting"),
    502: (Action.WAIT_RETRY, "Bad gateway - waiting"),
    503: (Action.WAIT_RETRY, "Service unavailable - waiting"),
    504: (Action.WAIT_RETRY, "Gateway timeout - waiting"),
    OVERLOADED: (Action.WAIT_RETRY, "Overloaded - waiting"),
}

KIND_ACTIONS: dict[ErrorKind, tuple[Action, str]] = {
    ErrorKind.CONNECTION: (Action.WAIT_RETRY, "Network error - waiting"),
    ErrorKind.TIMEOUT: (Action.WAIT_RETRY, "Timed out - waiting"),
    ErrorKind.NON_FAST_FORWARD: (
        Action.PULL_RETRY,
        "Push rejected (non-fast-forward) - pulling, then retrying",
    ),
    ErrorKind.MERGE_CONFLICT: (
        Action.MANUAL_REVIEW,
        "Merge conflict - needs a person",
    ),
    # 000's failure_reasons example lists content_filter: the model refused, and
    # sending the same prompt again will be refused again.
    ErrorKind.CONTENT_FILTER: (
        Action.MANUAL_REVIEW,
        "Blocked by the content filter - needs a person",
    ),
    ErrorKind.INVALID_RESPONSE: (Action.ABORT, "Unusable response"),
}


def _header(headers: Mapping[str, str] | None, name: str) -> str | None:
    if not headers:
        return None
    wanted = name.lower()
    for key, value in headers.items():
        if key.lower() == wanted:
            return str(value).strip()
    return None


def parse_retry_after(value: str | None, *, now: float | None = None) -> int | None:
    """Seconds to wait from a Retry-After header: delta-seconds or an HTTP date.

    None when the header is missing or unreadable; never negative.
    """
    if not value:
        return None
    try:
        return max(0, math.ceil(float(value)))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None or when.tzinfo is None:
        return None
    current = time.time() if now is None else now
    return max(0, math.ceil(when.timestamp() - current))


def parse_ratelimit_reset(value: str | None, *, now: float | None = None) -> int | None:
    """Seconds until GitHub's `x-ratelimit-reset` (a UTC epoch second); None if
    missing or unreadable; never negative."""
    if not value:
        return None
    try:
        reset = float(value)
    except ValueError:
        return None
    current = time.time() if now is None else now
    return max(0, math.ceil(reset - current))


def _body_message(body: Any) -> str:
    if isinstance(body, Mapping):
        error = body.get("error")
        if isinstance(error, Mapping):  # Anthropic: {"error": {"message": ...}}
            return str(error.get("message") or "")
        return str(body.get("message") or "")
    return "" if body is None else str(body)


def _is_rate_limit(headers: Mapping[str, str] | None, message: str) -> bool:
    """GitHub reports its primary limit as a 403 with x-ratelimit-remaining 0 and
    secondary limits as a 403 with retry-after or a "rate limit" message."""
    return (
        _header(headers, "x-ratelimit-remaining") == "0"
        or _header(headers, "retry-after") is not None
        or "rate limit" in message.lower()
    )


def classify_http(
    source: str,
    status: int,
    *,
    headers: Mapping[str, str] | None = None,
    body: Any = None,
    original: BaseException | None = None,
    now: float | None = None,
) -> ClassifiedError:
    """Classify an HTTP error response by status, headers and body.

    `body` may be the decoded JSON (GitHub's {"message": ...}, Anthropic's
    {"error": {"message": ...}}) or text; its message is appended to ours.
    `now` (epoch seconds) is for tests of the x-ratelimit-reset arithmetic.
    """
    detail = _body_message(body)
    if status in HTTP_ACTIONS:
        action, message = HTTP_ACTIONS[status]
    elif 400 <= status < 500:
        action, message = Action.ABORT, "Client error"
    elif status >= 500:
        action, message = Action.WAIT_RETRY, "Server error - waiting"
    else:
        action, message = Action.ABORT, "Unexpected HTTP status"

    retry_after = parse_retry_after(_header(headers, "retry-after"), now=now)
    if status == 403 and _is_rate_limit(headers, detail):
        action, message = Action.WAIT_RETRY, "Rate limited - waiting"
    if status == 429 or (status == 403 and action is Action.WAIT_RETRY):
        if retry_after is None:
            retry_after = parse_ratelimit_reset(
                _header(headers, "x-ratelimit-reset"), now=now
            )
        if retry_after is None:
            retry_after = DEFAULT_RATE_LIMIT_WAIT
    if action is not Action.WAIT_RETRY:
        retry_after = None
    if detail:
        message = f"{message}: {detail}"
    return make_error(
        source, status, action, message, retry_after=retry_after, original=original
    )


def classify_kind(
    source: str,
    kind: str,
    *,
    message: str = "",
    retry_after: int | None = None,
    original: BaseException | None = None,
) -> ClassifiedError:
    """Classify a failure that has no HTTP status (network, git, content filter).

    `code` is 0 (NO_RESPONSE): `code` is an HTTP status and there was none.
    """
    action, default_message = KIND_ACTIONS[ErrorKind(kind)]
    text = f"{default_message}: {message}" if message else default_message
    return make_error(
        source,
        NO_RESPONSE,
        action,
        text,
        retry_after=retry_after if action is Action.WAIT_RETRY else None,
        original=original,
    )
