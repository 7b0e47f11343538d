"""The GitHub client: authentication, the one retry policy, the one error type.

Authentication: the token comes from the registered `TokenSource`
(integrations/github/tokens.py; codex.github keeps it):

- a GitHub App when GITHUB_APP_ID, GITHUB_APP_PRIVATE_KEY and
  GITHUB_APP_INSTALLATION_ID are all set: the app's JWT is exchanged for an
  installation token (`fetch_installation_token`), which the source caches
  for its hour, so many workers make one exchange;
- otherwise the personal token the source reads (GITHUB_TOKEN, rotated by the
  workers on a 401).

Retry policy (`ReadRetry`): only reads (GET, HEAD, OPTIONS) are retried, and
only on 5xx or a dropped connection. A write is never repeated automatically:
a 502 after GitHub applied a POST would make a second pull request or comment.
Writes go through `perform_once` with a lookup instead. Rate limits are never
slept on in a worker: they become `ClassifiedFailure(wait_retry)` with the
server's reset time, and the job is requeued for then.

Errors: every call runs inside `github_errors`, which turns PyGithub's and
requests' exceptions into `ClassifiedFailure` through `classified(exc)`.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Mapping
from datetime import datetime
from typing import Any

import requests
from django.conf import settings
from github import Auth, Github, GithubException, GithubIntegration, GithubRetry

from codex.core.errors import (
    DEFAULT_RATE_LIMIT_WAIT,
    NO_RESPONSE,
    Action,
    ClassifiedFailure,
    ErrorKind,
    classify_http,
    classify_kind,
    make_error,
    parse_ratelimit_reset,
    parse_retry_after,
)
from integrations.github.tokens import (
    SOURCE,
    app_configured,
    token_refused,
    token_source,
)

__all__ = ["SOURCE", "app_configured"]

logger = logging.getLogger(__name__)

READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
PER_PAGE = 100
# Retries of a failed read; the first retry is immediate (urllib3 does not
# back off before the second attempt), later ones back off exponentially.
READ_RETRIES = 3
DEFAULT_BACKOFF_FACTOR = 0.5
# PyGithub's own pacing between calls (GitHub asks integrations not to send
# writes in bursts); tests set CODEX_GITHUB_SECONDS_BETWEEN_* to None.
DEFAULT_SECONDS_BETWEEN_REQUESTS = 0.25
DEFAULT_SECONDS_BETWEEN_WRITES = 1.0
TIMEOUT_SECONDS = 30

# GraphQL answers rate limits with 200 and {"errors": [{"type": "RATE_LIMITED"}]}.
GRAPHQL_RATE_LIMITED = "RATE_LIMITED"
GRAPHQL_FORBIDDEN = "FORBIDDEN"


class ReadRetry(GithubRetry):
    """GithubRetry limited to what is safe to repeat without asking.

    GithubRetry retries POST and sleeps through rate limits (403 with
    retry-after or a rate-limit message) by default. Here: reads only, 5xx
    only, and Retry-After is not slept on; rate limits reach `classified`.
    """

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("total", READ_RETRIES)
        kwargs.setdefault(
            "backoff_factor",
            getattr(settings, "CODEX_GITHUB_RETRY_BACKOFF", DEFAULT_BACKOFF_FACTOR),
        )
        kwargs["allowed_methods"] = READ_METHODS
        kwargs["respect_retry_after_header"] = False
        # After the last retry, hand PyGithub the response so the error keeps
        # its status and headers (instead of urllib3's MaxRetryError).
        kwargs["raise_on_status"] = False
        super().__init__(**kwargs)

    def is_retry(
        self, method: str, status_code: int, has_retry_after: bool = False
    ) -> bool:
        """Retry a read that got a 5xx; never a 4xx (403/429 are rate limits,
        which a worker waits for by being requeued, not by sleeping)."""
        if status_code < 500 or method.upper() not in READ_METHODS:
            return False
        return super().is_retry(method, status_code, has_retry_after)


def read_retry() -> ReadRetry:
    """The one retry policy of every GitHub client."""
    return ReadRetry()


# -- errors -------------------------------------------------------------------


def _graphql_errors(data: Any) -> list[Mapping[str, Any]]:
    if isinstance(data, Mapping) and isinstance(data.get("errors"), list):
        return [error for error in data["errors"] if isinstance(error, Mapping)]
    return []


def _graphql_failure(
    exc: GithubException, errors: list[Mapping[str, Any]]
) -> ClassifiedFailure | None:
    types = {str(error.get("type") or "") for error in errors}
    text = "; ".join(str(error.get("message") or "") for error in errors)
    headers = exc.headers or {}
    if GRAPHQL_RATE_LIMITED in types:
        wait = parse_retry_after(_header(headers, "retry-after"))
        if wait is None:
            wait = parse_ratelimit_reset(_header(headers, "x-ratelimit-reset"))
        return make_error(
            SOURCE,
            exc.status,
            Action.WAIT_RETRY,
            f"Rate limited (GraphQL) - waiting: {text}",
            retry_after=DEFAULT_RATE_LIMIT_WAIT if wait is None else wait,
            original=exc,
        ).exception()
    if GRAPHQL_FORBIDDEN in types:
        return make_error(
            SOURCE,
            exc.status,
            Action.MANUAL_REVIEW,
            f"Permission denied (GraphQL) - needs a person to grant access: {text}",
            original=exc,
        ).exception()
    return None


def _header(headers: Mapping[str, Any], name: str) -> str | None:
    for key, value in headers.items():
        if key.lower() == name:
            return str(value)
    return None


def classified(exc: BaseException) -> ClassifiedFailure:
    """The one classified error (docs/domain/concurrency.md#error-classification)
    for a failure talking to GitHub.

    GithubException and its subclasses (RateLimitExceededException,
    BadCredentialsException, UnknownObjectException, ...) are classified by
    status, headers and body through `classify_http`: 401 rotate_token, 403
    with x-ratelimit-remaining 0 or retry-after and 429 wait_retry (retry_after
    from the headers), other 403 and 404 manual_review, 409 pull_retry, 5xx
    wait_retry. GraphQL errors (HTTP 200 with "errors") are read by type.
    requests' timeouts and connection errors wait and retry. A ClassifiedFailure
    passes through unchanged.
    """
    if isinstance(exc, ClassifiedFailure):
        return exc
    if isinstance(exc, GithubException):
        errors = _graphql_errors(exc.data)
        if errors:
            failure = _graphql_failure(exc, errors)
            if failure is not None:
                return failure
        return classify_http(
            SOURCE,
            exc.status or NO_RESPONSE,
            headers=exc.headers or {},
            body=exc.data,
            original=exc,
        ).exception()
    if isinstance(exc, requests.Timeout):
        kind = ErrorKind.TIMEOUT
    elif isinstance(exc, requests.RequestException):
        # ConnectionError, RetryError (connection retries exhausted), SSL, ...
        kind = ErrorKind.CONNECTION
    else:
        kind = ErrorKind.INVALID_RESPONSE
    return classify_kind(SOURCE, kind, message=str(exc), original=exc).exception()


CLASSIFIABLE = (GithubException, requests.RequestException)


class _GitHubErrors(contextlib.ContextDecorator):
    """`with github_errors:` or `@github_errors`: PyGithub and requests
    failures leave as ClassifiedFailure, chained to the original."""

    def __enter__(self) -> _GitHubErrors:
        return self

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> bool:
        if exc is None or not isinstance(exc, CLASSIFIABLE):
            return False
        failure = classified(exc)
        logger.info("github call failed: %s", failure)
        if failure.action is Action.ROTATE_TOKEN:
            token_refused()
        raise failure from exc


github_errors = _GitHubErrors()


# -- authentication -----------------------------------------------------------


def _private_key() -> str:
    # Environment variables often carry the PEM with literal "\n" sequences.
    return str(settings.GITHUB_APP_PRIVATE_KEY).replace("\\n", "\n")


def _pacing() -> dict[str, float | None]:
    return {
        "seconds_between_requests": getattr(
            settings,
            "CODEX_GITHUB_SECONDS_BETWEEN_REQUESTS",
            DEFAULT_SECONDS_BETWEEN_REQUESTS,
        ),
        "seconds_between_writes": getattr(
            settings,
            "CODEX_GITHUB_SECONDS_BETWEEN_WRITES",
            DEFAULT_SECONDS_BETWEEN_WRITES,
        ),
    }


def fetch_installation_token() -> tuple[str, datetime | None]:
    """Exchange the app's JWT for an installation token (one POST, which is
    not retried: a lost answer only costs another exchange next time)."""
    integration = GithubIntegration(
        auth=Auth.AppAuth(int(settings.GITHUB_APP_ID), _private_key()),
        base_url=settings.GITHUB_BASE_URL,
        retry=read_retry(),
        timeout=TIMEOUT_SECONDS,
        **_pacing(),
    )
    with github_errors:
        grant = integration.get_access_token(int(settings.GITHUB_APP_INSTALLATION_ID))
    return grant.token, grant.expires_at


def github_token() -> str:
    """The token Codex talks to GitHub (and git to github.com) with now, from
    the registered TokenSource. Raises ClassifiedFailure(manual_review) when
    nothing is configured: a person has to set GITHUB_TOKEN or the GitHub App
    settings."""
    return token_source().token()


def github_client() -> Github:
    """A PyGithub client configured from settings, with the current token.

    Lazy (`get_repo` makes no request), 100 items per page, GITHUB_BASE_URL
    (GitHub Enterprise: https://host/api/v3), the read-only retry policy.
    Every repository uses the one installation.
    """
    return Github(
        auth=Auth.Token(github_token()),
        base_url=settings.GITHUB_BASE_URL,
        per_page=PER_PAGE,
        retry=read_retry(),
        timeout=TIMEOUT_SECONDS,
        lazy=True,
        **_pacing(),
    )
