"""The GitHub client: authentication, the one retry policy, the one error type.

Authentication (settings):

- a GitHub App when GITHUB_APP_ID, GITHUB_APP_PRIVATE_KEY and
  GITHUB_APP_INSTALLATION_ID are all set: the app's JWT is exchanged for an
  installation token, cached (encrypted) in the GitHubToken cache for its hour
  and refreshed under the cache's lease, so many workers make one exchange;
- otherwise the personal token `current_credential("github")` (GITHUB_TOKEN,
  rotated by the workers on a 401).

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
import uuid
from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

import requests
from django.conf import settings
from django.utils import timezone
from github import Auth, Github, GithubException, GithubIntegration, GithubRetry

from codex.configuration.credentials import current_credential
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
from codex.core.models import LeaseUnavailable
from codex.github.models import GitHubToken

if TYPE_CHECKING:
    from codex.repositories.models import Repository

logger = logging.getLogger(__name__)

SOURCE = "github"
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
        if failure.action is Action.ROTATE_TOKEN and app_configured():
            # For an app, "another token" is a new installation token.
            forget_installation_token()
        raise failure from exc


github_errors = _GitHubErrors()


# -- authentication -----------------------------------------------------------


def app_configured() -> bool:
    """Whether Codex authenticates as a GitHub App (all three settings set)."""
    return bool(
        settings.GITHUB_APP_ID
        and settings.GITHUB_APP_PRIVATE_KEY
        and settings.GITHUB_APP_INSTALLATION_ID
    )


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


def installation_token_name() -> str:
    """The GitHubToken cache row of the configured installation."""
    return f"installation:{settings.GITHUB_APP_INSTALLATION_ID}"


def _fetch_installation_token() -> tuple[str, datetime | None]:
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


def installation_token() -> str:
    """The installation token, from the cache while more than 5 minutes remain,
    else a new one fetched by one worker under the cache row's lease."""
    return GitHubToken.get_or_refresh(
        _fetch_installation_token, name=installation_token_name()
    )


def forget_installation_token() -> bool:
    """Treat the cached installation token as expired (GitHub refused it: it
    was revoked, or the installation changed), so the next call exchanges a new
    one. False when there is none, or someone holds the lease: then a refresh
    is under way already. Never waits for the lease."""
    row = GitHubToken.objects.filter(name=installation_token_name()).first()
    if row is None or not row.token_encrypted:
        return False
    holder = f"token-forget:{uuid.uuid4().hex[:12]}"
    try:
        row.acquire_lease(holder, attempts=1)
    except LeaseUnavailable:
        return False
    try:
        row.expires_at = timezone.now()
        row.save(release_lease=True)
    finally:
        if row.held_lease == holder:
            row.release_lease()
    return True


def github_token() -> str:
    """The token Codex talks to GitHub (and git to github.com) with now.

    Raises ClassifiedFailure(manual_review) when nothing is configured: a
    person has to set GITHUB_TOKEN or the GitHub App settings.
    """
    if app_configured():
        return installation_token()
    token = current_credential(SOURCE)
    if not token:
        make_error(
            SOURCE,
            NO_RESPONSE,
            Action.MANUAL_REVIEW,
            "No GitHub credentials: set GITHUB_TOKEN or the GITHUB_APP_* settings",
        ).raise_()
    return token


def github_client(repository: Repository | None = None) -> Github:
    """A PyGithub client configured from settings, for `repository`.

    Lazy (`get_repo` makes no request), 100 items per page, GITHUB_BASE_URL
    (GitHub Enterprise: https://host/api/v3), the read-only retry policy.
    `repository` is accepted so that per-repository installations can be
    chosen here later; today every repository uses the one installation.
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
