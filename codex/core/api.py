"""The API's one error shape: {"error": {"code", "message", "fields"}}.

Every error the API answers, whether raised by DRF (validation, authentication,
throttling, 404) or by the domain (a disallowed transition, a version conflict),
goes through `exception_handler` so that clients parse one shape.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import QuerySet
from django.http import Http404, QueryDict
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse
from rest_framework import exceptions, serializers, status
from rest_framework.pagination import CursorPagination
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


class NewestFirstCursorPagination(CursorPagination):
    """Stable pages over growing tables: a cursor on the primary key, newest first.

    A cursor is base64 the client can forge: its position is checked against
    the ordering field (an id must be an integer the database can hold) so a
    crafted one is the 404 "Invalid cursor" of any bad cursor, not a 500.
    """

    ordering = "-id"
    page_size_query_param = "page_size"
    max_page_size = 500

    def paginate_queryset(self, queryset, request, view=None):
        self._cursor_model = queryset.model
        return super().paginate_queryset(queryset, request, view)

    def decode_cursor(self, request):
        cursor = super().decode_cursor(request)
        if cursor is None or cursor.position is None:
            return cursor
        ordering = self.ordering
        name = (ordering if isinstance(ordering, str) else ordering[0]).lstrip("-")
        model = getattr(self, "_cursor_model", None)
        if model is not None and not _storable_position(model, name, cursor.position):
            raise exceptions.NotFound(self.invalid_cursor_message)
        return cursor


_BIGINT_MAX = 2**63 - 1


def _storable_position(model, name: str, position: str) -> bool:
    """Whether a cursor's position is a value of the ordering field."""
    field = model._meta.get_field(name)
    if "\x00" in position:
        return False
    try:
        value = field.to_python(position)
    except (DjangoValidationError, TypeError, ValueError):
        return False
    return not isinstance(value, int) or abs(value) <= _BIGINT_MAX


class OldestFirstCursorPagination(NewestFirstCursorPagination):
    """For logs read as a story (a task's events): in the order they happened."""

    ordering = "id"


# -- strict input -------------------------------------------------------------------


class StrictInputMixin:
    """A write serializer that takes its fields as they are documented.

    DRF ignores fields it does not know (a typo such as "priorty" would be
    dropped in silence) and turns numbers into text ("title": 123 is stored as
    "123"). Both are a 400 here: unknown fields by name, and a text field
    (or a list of text) given anything but strings.
    """

    def to_internal_value(self, data):
        if isinstance(data, dict):
            errors: dict[str, list[str]] = {}
            writable = {
                name for name, field in self.fields.items() if not field.read_only
            }
            for name in data:
                if name not in writable:
                    errors[str(name)] = ["Unknown field."]
            for name, field in self.fields.items():
                if name in data and not field.read_only:
                    problem = _not_text(field, data[name])
                    if problem:
                        errors[name] = [problem]
            if errors:
                raise exceptions.ValidationError(errors)
        return super().to_internal_value(data)  # type: ignore[misc]


def _not_text(field: serializers.Field, value: Any) -> str | None:
    """Why `value` is not what the text field `field` takes, or None."""
    if isinstance(field, serializers.ChoiceField):
        return None if isinstance(value, str) else "Must be a string."
    if isinstance(field, serializers.CharField):
        if value is None:
            return None  # DRF's own null check answers
        return None if isinstance(value, str) else "Must be a string."
    text_list = isinstance(field, serializers.ListField) and isinstance(
        field.child, serializers.CharField
    )
    items = value if text_list and isinstance(value, list) else []
    if not all(isinstance(item, str) for item in items):
        return "Every item must be a string."
    return None


# -- query-string filters ---------------------------------------------------------


def filter_choices(
    queryset: QuerySet,
    params: QueryDict,
    choices: dict[str, tuple[str, list[str]]],
) -> tuple[QuerySet, dict[str, list[str]]]:
    """Apply ?name=a,b filters whose values come from a fixed list.

    `choices` maps a parameter to (model lookup, allowed values). Returns the
    filtered queryset and the errors per parameter, for the caller to raise once
    with its other filters' errors (one 400 names every bad parameter).
    """
    errors: dict[str, list[str]] = {}
    for name, (lookup, allowed) in choices.items():
        raw = params.get(name)
        if raw is None:
            continue
        values = [value.strip() for value in raw.split(",") if value.strip()]
        unknown = [value for value in values if value not in allowed]
        if unknown or not values:
            errors[name] = [
                f"Unknown value {', '.join(unknown) or '(empty)'}; "
                f"use one of {', '.join(allowed)}."
            ]
            continue
        queryset = queryset.filter(**{f"{lookup}__in": values})
    return queryset, errors


def filter_repository(
    queryset: QuerySet, params: QueryDict, lookup: str, errors: dict
) -> QuerySet:
    """Apply ?repository=<url> in any spelling intake accepts."""
    from codex.repositories.models import normalize_repository_url

    if "repository" not in params:
        return queryset
    try:
        url = normalize_repository_url(params["repository"])
    except DjangoValidationError as exc:
        errors["repository"] = exc.messages
        return queryset
    return queryset.filter(**{lookup: url})


def raise_filter_errors(errors: dict[str, list[str]]) -> None:
    if errors:
        raise exceptions.ValidationError(errors)


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

IDEMPOTENCY_KEY_PARAMETER = OpenApiParameter(
    name="Idempotency-Key",
    type=OpenApiTypes.STR,
    location=OpenApiParameter.HEADER,
    required=False,
    description="1 to 200 printable characters. The same key with the same "
    "request within 24 hours replays the first answer (header "
    "Idempotent-Replayed: true); with another request it is a 422.",
)


def error_responses(*statuses: int) -> dict[int, OpenApiResponse]:
    """Schema entries for error answers, all in the one error shape."""
    return {
        code: OpenApiResponse(ErrorSerializer, description=ERROR_DESCRIPTIONS[code])
        for code in statuses
    }


def choice_parameters(
    choices: dict[str, tuple[str, list[str]]],
) -> list[OpenApiParameter]:
    """OpenAPI entries for the ?name=a,b filters of `filter_choices`."""
    return [
        OpenApiParameter(
            name,
            OpenApiTypes.STR,
            description=f"Comma-separated; any of {', '.join(allowed)}.",
        )
        for name, (_, allowed) in choices.items()
    ]


REPOSITORY_PARAMETER = OpenApiParameter(
    "repository", OpenApiTypes.STR, description="A repository URL."
)

TASK_PARAMETER = OpenApiParameter(
    "task", OpenApiTypes.STR, description="A task id (FEAT-YYYYMMDD-xxxxxx)."
)


class FilteredListMixin:
    """A list view's ?filters: `choice_filters` (parameter → (lookup, allowed)),
    ?repository= when `repository_lookup` is set, ?task= when `task_lookup` is."""

    choice_filters: dict[str, tuple[str, list[str]]] = {}
    repository_lookup: str | None = None
    task_lookup: str | None = None

    def filter_queryset(self, queryset: QuerySet) -> QuerySet:
        queryset = super().filter_queryset(queryset)  # type: ignore[misc]
        params = self.request.query_params  # type: ignore[attr-defined]
        queryset, errors = filter_choices(queryset, params, self.choice_filters)
        if self.repository_lookup:
            queryset = filter_repository(
                queryset, params, self.repository_lookup, errors
            )
        if self.task_lookup and "task" in params:
            queryset = queryset.filter(**{self.task_lookup: params["task"].strip()})
        raise_filter_errors(errors)
        return queryset

    def filter_parameters(self) -> list[OpenApiParameter]:
        parameters = choice_parameters(self.choice_filters)
        if self.repository_lookup:
            parameters.append(REPOSITORY_PARAMETER)
        if self.task_lookup:
            parameters.append(TASK_PARAMETER)
        return parameters


# -- the OpenAPI schema and its Swagger UI ---------------------------------------------

# The schema's settings, also given to `manage.py spectacular` through
# SPECTACULAR_SETTINGS (a test checks the two agree).
OPENAPI_SETTINGS: dict[str, Any] = {
    "TITLE": "Codex API",
    "DESCRIPTION": (
        "Tasks, escalations, repositories and the agents working on them. "
        "Authenticate with `Authorization: Token <key>`. Errors have one shape: "
        '`{"error": {"code", "message", "fields"}}`. POSTs accept an '
        "Idempotency-Key header."
    ),
    "VERSION": "1.0.0",
    "ENUM_NAME_OVERRIDES": {
        "TaskStatusEnum": "codex.tasks.models.choices.Status",
        "AgentInstanceStatusEnum": "codex.fleet.models.choices.InstanceStatus",
        "AgentRunStatusEnum": "codex.fleet.models.choices.RunStatus",
        "ClaimStateEnum": "codex.claims.models.claim.ClaimState",
        "BacklogStateEnum": "codex.claims.models.backlog.BacklogState",
        "RecommendationEnum": "codex.tasks.models.reports.Recommendation",
    },
}
