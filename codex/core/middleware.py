"""Request checks that hold for every view: no NUL in a path or a query string;
and the probes, answered before the host check.

PostgreSQL text cannot hold U+0000: a NUL reaching a lookup (a task id in the
path, a ?task= filter, the console's ?status__exact=) fails in the database as
a 500. No URL of Codex has a use for one, so it is refused here, once, with a
400 that says why: in the API's error shape under /api/, as a plain page
elsewhere. Bodies are checked where they are parsed (codex.core.api.parsers for
the API; Django's form fields refuse NUL themselves).
"""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import unquote

from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, JsonResponse
from django.utils.module_loading import import_string

MESSAGE = "The address may not contain NUL (U+0000) characters."


def api_error(status: int, code: str, message: str) -> JsonResponse:
    """A response in the API's one error shape."""
    return JsonResponse(
        {"error": {"code": code, "message": message, "fields": {}}}, status=status
    )


def has_nul(request: HttpRequest) -> bool:
    """Whether the path or the query string holds U+0000, in any spelling."""
    query = request.META.get("QUERY_STRING", "")
    return (
        "\x00" in request.path_info
        or "\x00" in request.path
        or "\x00" in unquote(query.replace("+", " "))
    )


class RefuseNulMiddleware:
    """400 for a request whose path or query string holds a NUL."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if has_nul(request):
            if request.path.startswith("/api/"):
                return api_error(400, "invalid_characters", MESSAGE)
            return HttpResponseBadRequest(
                MESSAGE, content_type="text/plain; charset=utf-8"
            )
        return self.get_response(request)


class ProbeMiddleware:
    """Answers the probes (CODEX_PROBE_VIEWS: /healthz, and /metrics and
    /healthz/workers with the metrics token) before anything else looks at
    the request, and so before Django checks its Host against ALLOWED_HOSTS.

    Load balancers, Docker and Kubernetes address a container by its IP
    address, which no ALLOWED_HOSTS lists. Skipping the host check is safe
    for these views only: none of them builds a URL from the host, sets a
    cookie or reads a session, and what they say beyond "ok" needs the token.
    Everything else, a staff session on /metrics included, goes the usual way.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response
        self.views = {
            path: import_string(view)
            for path, view in getattr(settings, "CODEX_PROBE_VIEWS", {}).items()
        }

    def __call__(self, request: HttpRequest) -> HttpResponse:
        view = self.views.get(request.path_info)
        if view is not None and (
            request.path_info == "/healthz" or "HTTP_AUTHORIZATION" in request.META
        ):
            return view(request)
        return self.get_response(request)
