"""When the database is away (a restart, a failover, a network cut).

Web: a request that needs the database while it cannot be reached answers 503
with Retry-After, never a 500 traceback; the API in its one error shape
(`codex.core.api.errors.exception_handler`), other pages through
`DatabaseUnavailableMiddleware`. Connections are health-checked at the start of
each request (settings: CONN_HEALTH_CHECKS with CONN_MAX_AGE > 0), so the first
request after the database is back reconnects by itself; gunicorn needs no
restart.

Workers: `wait_for_database` lets a job that lost the database mid-step wait
until it answers again, so that it can hand its step back to the queue instead
of losing it (`codex.tasks.jobs.advance_task`).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable

from django.db import InterfaceError, OperationalError, connections
from django.http import HttpRequest, HttpResponse, JsonResponse

from codex.core.backoff import backoff_seconds

logger = logging.getLogger(__name__)

# What a lost or refused connection raises (psycopg and sqlite alike). Not
# IntegrityError or DataError: those are answers from a working database.
DATABASE_UNAVAILABLE = (OperationalError, InterfaceError)
RETRY_AFTER_SECONDS = 5
MESSAGE = "The database is unavailable; try again shortly."
# `wait_for_database`'s pause doubles from its `interval` up to this.
POLL_CAP = 5.0


def unavailable_body() -> dict:
    """The API's error shape for a 503 caused by the database."""
    return {
        "error": {
            "code": "database_unavailable",
            "message": MESSAGE,
            "fields": {},
            "retry_after": str(RETRY_AFTER_SECONDS),
        }
    }


def log_unavailable(request: HttpRequest | None, exception: BaseException) -> None:
    """One warning line for a request that lost the database: the request and
    the error, shortened (a driver's message can run to pages)."""
    logger.warning(
        "database unavailable during %s %s: %s: %s",
        getattr(request, "method", "?"),
        getattr(request, "path", "?"),
        type(exception).__name__,
        str(exception).strip()[:300],
    )


def retry_after_header() -> dict[str, str]:
    """The header of every 503 for a lost database."""
    return {"Retry-After": str(RETRY_AFTER_SECONDS)}


def unavailable_response(request: HttpRequest) -> HttpResponse:
    """503 with Retry-After: JSON for the API (and JSON clients), text otherwise."""
    wants_json = request.path.startswith("/api/") or "application/json" in (
        request.headers.get("Accept", "")
    )
    if wants_json:
        return JsonResponse(
            unavailable_body(), status=503, headers=retry_after_header()
        )
    return HttpResponse(
        f"{MESSAGE}\n",
        status=503,
        content_type="text/plain; charset=utf-8",
        headers=retry_after_header(),
    )


class DatabaseUnavailableMiddleware:
    """Turns a view's lost-database error into a 503 instead of a 500.

    (API views never get here: DRF hands their exceptions to
    `codex.core.api.errors.exception_handler`, which answers the same 503.)
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(
        self, request: HttpRequest, exception: Exception
    ) -> HttpResponse | None:
        if not isinstance(exception, DATABASE_UNAVAILABLE):
            return None
        log_unavailable(request, exception)
        return unavailable_response(request)


def connection_lost(alias: str = "default") -> bool:
    """Whether the connection of `alias` is gone (never made, closed after a
    failed rollback, or broken), as after a restart. Errors of a working
    connection (SQLite's "database is locked" or "no such table", a statement
    timeout, a deadlock) are no outage: retrying them blindly could loop."""
    connection = connections[alias]
    if connection.connection is None:
        return True
    try:
        return not connection.is_usable()
    except Exception:  # noqa: BLE001 - whatever it raises, it is not usable
        return True


def database_answers(alias: str = "default") -> bool:
    """True when a fresh connection to `alias` runs SELECT 1."""
    connection = connections[alias]
    with contextlib.suppress(*DATABASE_UNAVAILABLE):
        connection.close()  # a dead connection may complain; it is closed now
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except DATABASE_UNAVAILABLE:
        return False
    return True


def wait_for_database(
    timeout: float,
    *,
    alias: str = "default",
    interval: float = 0.5,
    sleep: Callable[[float], None] = time.sleep,
) -> bool:
    """Poll until the database answers (True) or `timeout` seconds pass (False).

    Every attempt starts from a new connection: the old one may be dead. The
    pause between attempts doubles from `interval` up to POLL_CAP seconds."""
    deadline = time.monotonic() + timeout
    attempt = 0
    while True:
        if database_answers(alias):
            return True
        if time.monotonic() >= deadline:
            return False
        pause = backoff_seconds(attempt, base=interval, cap=POLL_CAP, jitter=False)
        sleep(min(pause, max(0.0, deadline - time.monotonic())))
        attempt += 1
