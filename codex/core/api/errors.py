"""The API's one error shape: {"error": {"code", "message", "fields"}}.

Every error the API answers, whether raised by DRF (validation, authentication,
throttling, 404) or by the domain (a disallowed transition, a version conflict),
goes through `exception_handler` so that clients parse one shape.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied
from django.http import Http404
from drf_spectacular.utils import OpenApiResponse
from rest_framework import exceptions, serializers, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler
from rest_framework.views import set_rollback

from codex.core.database import (
    DATABASE_UNAVAILABLE,
    log_unavailable,
    retry_after_header,
    unavailable_body,
)


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
    elif isinstance(exc, DATABASE_UNAVAILABLE):
        # The same 503 as the pages' middleware; DRF's handler is skipped, so
        # mark the request's atomic blocks for rollback as it would.
        log_unavailable(context.get("request"), exc)
        set_rollback()
        return Response(unavailable_body(), status=503, headers=retry_after_header())
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
        if isinstance(exc, exceptions.NotAuthenticated):
            message += " Send the header `Authorization: Token <key>`."
    body: dict[str, Any] = {"code": code, "message": message, "fields": fields}
    if isinstance(exc, exceptions.Throttled) and exc.wait is not None:
        # The header says it too; the body lets clients that log bodies see it.
        body["retry_after"] = response.get("Retry-After")
    body.update(getattr(exc, "extra", {}))
    response.data = {"error": body}
    return response


# -- the error shape in the OpenAPI schema -------------------------------------------


class ErrorDetailSerializer(serializers.Serializer):
    """The inside of every error answer."""

    code = serializers.CharField(help_text="Machine-readable, e.g. not_found.")
    message = serializers.CharField(help_text="For people.")
    fields = serializers.DictField(
        child=serializers.JSONField(),
        help_text="Per field (or header) messages of a 400; empty otherwise.",
    )
    allowed_actions = serializers.ListField(
        child=serializers.CharField(),
        required=False,
        help_text="409 transition_not_allowed: what the resource allows now.",
    )
    status = serializers.CharField(
        required=False, help_text="409: the resource's current state."
    )
    lease_holder = serializers.CharField(
        required=False, help_text="409 lease_held: who is working on it."
    )
    retry_after = serializers.CharField(
        required=False, help_text="429: seconds to wait (as in Retry-After)."
    )


class ErrorSerializer(serializers.Serializer):
    """{"error": {"code", "message", "fields", ...}}: the one error shape."""

    error = ErrorDetailSerializer()


ERROR_DESCRIPTIONS = {
    400: "Invalid fields, filters or headers (`fields` names each).",
    401: "No credentials, or an invalid or revoked token.",
    403: "The caller's role does not allow this.",
    404: "No such resource.",
    409: "The resource's state does not allow this (`allowed_actions` lists "
    "what it allows now).",
    413: "The body is larger than CODEX_API_MAX_BODY_BYTES.",
    415: "The body is not JSON (writes are JSON only).",
    422: "The Idempotency-Key was used before with another request.",
    429: "Too many requests; wait `Retry-After` seconds.",
    503: "The database is unavailable; retry after `Retry-After` seconds.",
}


def error_responses(*statuses: int) -> dict[int, OpenApiResponse]:
    """Schema entries for error answers, all in the one error shape."""
    return {
        code: OpenApiResponse(ErrorSerializer, description=ERROR_DESCRIPTIONS[code])
        for code in statuses
    }
