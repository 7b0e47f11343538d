"""Who may read /metrics and /healthz/workers: a scraper with the metrics
token (CODEX_METRICS_TOKEN, `Authorization: Bearer <token>`), or an operator
(a staff account) signed in to the console. They name hosts, process ids and
what blocks the installation, so neither is open like /healthz."""

from __future__ import annotations

import hmac

from django.conf import settings
from django.http import HttpRequest, HttpResponse


def refusal(request: HttpRequest) -> HttpResponse | None:
    """None when the request may read the monitoring views, else the 401 or
    403 that says why (plain text: scrapers log it)."""
    header = request.META.get("HTTP_AUTHORIZATION", "")
    if header:
        scheme, _, token = header.partition(" ")
        expected = settings.CODEX_METRICS_TOKEN
        if scheme.lower() != "bearer" or not token.strip():
            return _unauthorized("use Authorization: Bearer <CODEX_METRICS_TOKEN>")
        if not expected:
            return _unauthorized(
                "no metrics token is configured (CODEX_METRICS_TOKEN); sign in to "
                "the console as an operator instead"
            )
        if not hmac.compare_digest(token.strip().encode(), expected.encode()):
            return _unauthorized("the metrics token is wrong")
        return None
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return _unauthorized(
            "send Authorization: Bearer <CODEX_METRICS_TOKEN>, or sign in to the "
            "console as an operator"
        )
    if not (user.is_active and user.is_staff):
        return HttpResponse(
            "Only operators (staff accounts) may read this.\n",
            status=403,
            content_type="text/plain; charset=utf-8",
        )
    return None


def _unauthorized(reason: str) -> HttpResponse:
    response = HttpResponse(
        f"Unauthorized: {reason}.\n",
        status=401,
        content_type="text/plain; charset=utf-8",
    )
    response["WWW-Authenticate"] = 'Bearer realm="codex-metrics"'
    return response
