"""The API's OpenAPI schema: what every operation declares, and its settings.

Kept apart from the other modules of codex.core.api: drf_spectacular imports
DRF's generic views, which load the pagination class (codex.core.api.pagination)
while they load, so only modules above them import this one. The views name
their schema class themselves (`ApiMixin.schema`, `api_schema`), so the schema
does not depend on REST_FRAMEWORK's DEFAULT_SCHEMA_CLASS; setting that to
ApiSchema as well covers any other DRF view.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.permissions import AllowAny

from codex.core.api.errors import ERROR_DESCRIPTIONS, ErrorSerializer

IDEMPOTENCY_KEY_PARAMETER = OpenApiParameter(
    name="Idempotency-Key",
    type=OpenApiTypes.STR,
    location=OpenApiParameter.HEADER,
    required=False,
    description="1 to 200 printable characters. The same key with the same "
    "request within 24 hours replays the first answer (header "
    "Idempotent-Replayed: true); with another request it is a 422.",
)


class ApiSchema(AutoSchema):
    """drf-spectacular's AutoSchema, plus what every Codex view shares: the error
    answers it can give (all in the one error shape), its query-string filters
    and, on POSTs, the Idempotency-Key header."""

    def error_statuses(self) -> list[int]:
        """Every 4xx this operation can answer (schemathesis checks them)."""
        view = self.view
        statuses = {429}
        if not any(
            issubclass(permission, AllowAny)
            for permission in getattr(view, "permission_classes", [])
        ):
            statuses |= {401, 403}
        if self.method == "GET" and statuses != {429}:
            # Bad filters are 400; a missing object or a bad cursor is 404.
            statuses |= {400, 404}
        if self.method == "POST":
            statuses |= {400, 413, 415}
            if "{" in self.path:
                statuses.add(404)
            if self.is_idempotent():
                statuses.add(422)
            if getattr(view, "conflicts", False):
                statuses.add(409)
        return sorted(statuses)

    def handler(self):
        """The method answering this operation: a viewset's action (`create`,
        `list`) or an APIView's `get`/`post`."""
        action = getattr(self.view, "action", None)
        return getattr(self.view, action or self.method.lower(), None)

    def is_idempotent(self) -> bool:
        """Whether the operation honours Idempotency-Key (`@idempotent`)."""
        return getattr(self.handler(), "idempotent", False)

    def filter_parameters(self) -> list[OpenApiParameter]:
        """A list's query-string filters, as its FilterSet describes them."""
        filterset = getattr(self.view, "filterset_class", None)
        listing = getattr(self.view, "action", None) in (None, "list")
        if self.method != "GET" or filterset is None or not listing:
            return []
        return filterset.openapi_parameters()

    def get_filter_backends(self) -> list:
        # The filters are described by filter_parameters(), in Codex's words,
        # rather than guessed by drf-spectacular's django-filter extension.
        return []

    def _get_response_bodies(self, direction="response"):
        bodies = super()._get_response_bodies(direction)
        for code in self.error_statuses():
            bodies.setdefault(
                str(code),
                self._get_response_for_code(
                    OpenApiResponse(
                        ErrorSerializer, description=ERROR_DESCRIPTIONS[code]
                    ),
                    str(code),
                    direction=direction,
                ),
            )
        return bodies

    def get_override_parameters(self) -> list:
        parameters = list(super().get_override_parameters())
        parameters += self.filter_parameters()
        if self.method == "POST" and self.is_idempotent():
            parameters.append(IDEMPOTENCY_KEY_PARAMETER)
        return parameters


def api_schema(**kwargs):
    """extend_schema on a view method, built on ApiSchema (extend_schema would
    otherwise start from DEFAULT_SCHEMA_CLASS as it was at import time)."""

    def decorator(method):
        method.schema = ApiSchema
        return extend_schema(**kwargs)(method)

    return decorator


# The document's own settings (title, description, version, enum names): the
# ones SPECTACULAR_SETTINGS gives `manage.py spectacular` (codex/settings/api.py),
# given to the schema view too, so the two describe one document.
DOCUMENT_SETTINGS = ("TITLE", "DESCRIPTION", "VERSION", "ENUM_NAME_OVERRIDES")
OPENAPI_SETTINGS: dict[str, Any] = {
    name: settings.SPECTACULAR_SETTINGS[name] for name in DOCUMENT_SETTINGS
}
