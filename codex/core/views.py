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
