"""Views that belong to no domain concept."""

from django.db import DatabaseError, connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_safe


@require_safe
def healthz(request: HttpRequest) -> JsonResponse:
    """200 when the database answers, 503 when it does not (for load balancers)."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except DatabaseError as exc:
        return JsonResponse(
            {"status": "unavailable", "database": type(exc).__name__}, status=503
        )
    return JsonResponse({"status": "ok", "database": "ok"})


def not_found(request: HttpRequest, exception: Exception | None = None):
    """404 for the whole site: API paths answer in the API's one error shape
    (even where no route matched, e.g. /api/escalations/abc/), pages as HTML."""
    if request.path.startswith("/api/"):
        return JsonResponse(
            {
                "error": {
                    "code": "not_found",
                    "message": "Not found.",
                    "fields": {},
                }
            },
            status=404,
        )
    from django.views.defaults import page_not_found

    return page_not_found(request, exception)


def _api_error(status: int, code: str, message: str) -> JsonResponse:
    return JsonResponse(
        {"error": {"code": code, "message": message, "fields": {}}}, status=status
    )


def bad_request(request: HttpRequest, exception: Exception | None = None):
    """400 from Django itself (a suspicious or oversized request): the API's
    error shape under /api/, Django's plain page elsewhere."""
    if request.path.startswith("/api/"):
        return _api_error(400, "bad_request", "The request could not be read.")
    from django.views.defaults import bad_request as page_bad_request

    return page_bad_request(request, exception)


def server_error(request: HttpRequest):
    """500 after Django has logged the exception: under /api/ still in the one
    error shape, so clients parse every answer the same way."""
    if request.path.startswith("/api/"):
        return _api_error(
            500, "server_error", "Something went wrong on our side; it was logged."
        )
    from django.views.defaults import server_error as page_server_error

    return page_server_error(request)
