"""The API's one error shape: {"error": {"code", "message", "fields"}}.

Every error the API answers, whether raised by DRF (validation, authentication,
throttling, 404) or by the domain (a disallowed transition, a version conflict),
goes through `exception_handler` so that clients parse one shape.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied
from django.http import Http404
from rest_framework import exceptions, status
from rest_framework.pagination import CursorPagination
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler


class Conflict(exceptions.APIException):
    """409: the request is valid but the resource's state does not allow it."""

    status_code = status.HTTP_409_CONFLICT
    default_code = "conflict"
    default_detail = "The resource's current state does not allow this."

    def __init__(self, detail: str, code: str = "conflict", **extra: Any) -> None:
        super().__init__(detail, code)
        self.extra = extra


class Unprocessable(exceptions.APIException):
    """422: the request is well-formed but contradicts an earlier one."""

    status_code = status.HTTP_422_UNPROCESSABLE_ENTITY
    default_code = "unprocessable"


def _flatten(detail: Any) -> Any:
    if isinstance(detail, dict):
        return {key: _flatten(value) for key, value in detail.items()}
    if isinstance(detail, list):
        return [_flatten(item) for item in detail]
    return str(detail)


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """Render every API error as {"error": {"code", "message", "fields", ...}}."""
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, PermissionDenied):
        exc = exceptions.PermissionDenied()
    response = drf_exception_handler(exc, context)
    if response is None or not isinstance(exc, exceptions.APIException):
        return response
    fields: dict[str, Any] = {}
    if isinstance(exc, exceptions.ValidationError):
        detail = exc.detail
        if isinstance(detail, dict):
            fields = _flatten(detail)
            message = "The request has invalid fields."
        else:
            fields = {"non_field_errors": _flatten(detail)}
            message = "; ".join(str(item) for item in _flatten(detail))
        code = "invalid"
    else:
        codes = exc.get_codes()
        code = codes if isinstance(codes, str) else exc.default_code
        message = str(exc.detail)
    body: dict[str, Any] = {"code": code, "message": message, "fields": fields}
    body.update(getattr(exc, "extra", {}))
    response.data = {"error": body}
    return response


class NewestFirstCursorPagination(CursorPagination):
    """Stable pages over growing tables: a cursor on the primary key, newest first."""

    ordering = "-id"
    page_size_query_param = "page_size"
    max_page_size = 500
