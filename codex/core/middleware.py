"""Request checks that hold for every view: no NUL in a path or a query string.

PostgreSQL text cannot hold U+0000: a NUL reaching a lookup (a task id in the
path, a ?task= filter, the console's ?status__exact=) fails in the database as
a 500. No URL of Codex has a use for one, so it is refused here, once, with a
400 that says why: in the API's error shape under /api/, as a plain page
elsewhere. Bodies are checked where they are parsed (codex.core.parsers for
the API; Django's form fields refuse NUL themselves).
"""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import unquote

from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, JsonResponse

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
