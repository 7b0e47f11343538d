"""What every Codex API view has: throttles and the OpenAPI schema class.

Not in codex.core.api: drf_spectacular imports DRF's generic views, which load
the pagination class from codex.core.api, so codex.core.api cannot import it.
The views name their schema class themselves (`ApiMixin.schema`, `api_schema`),
so the schema does not depend on REST_FRAMEWORK's DEFAULT_SCHEMA_CLASS; setting
that to ApiSchema as well covers any other DRF view.
"""

from __future__ import annotations

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.permissions import AllowAny

from codex.core.api import (
    ERROR_DESCRIPTIONS,
    IDEMPOTENCY_KEY_PARAMETER,
    ErrorSerializer,
    FilteredListMixin,
)
from codex.core.throttles import API_THROTTLES


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
            if getattr(getattr(view, "post", None), "idempotent", False):
                statuses.add(422)
            if getattr(view, "conflicts", False):
                statuses.add(409)
        return sorted(statuses)

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
        view = self.view
        if self.method == "GET" and isinstance(view, FilteredListMixin):
            parameters += view.filter_parameters()
        if self.method == "POST" and getattr(
            getattr(view, "post", None), "idempotent", False
        ):
            parameters.append(IDEMPOTENCY_KEY_PARAMETER)
        return parameters


class HashedTokenScheme(OpenApiAuthenticationExtension):
    """Describes `Authorization: Token <key>` (HashedTokenAuthentication)."""

    target_class = "codex.accounts.authentication.HashedTokenAuthentication"
    name = "tokenAuth"

    def get_security_definition(self, auto_schema):
        return {
            "type": "apiKey",
            "in": "header",
            "name": "Authorization",
            "description": 'Token authentication: "Token <key>". Operators issue '
            "and revoke keys in the console.",
        }


class ApiMixin:
    """Throttles and schema of every Codex API view. The throttles are set on
    the views rather than in REST_FRAMEWORK so other DRF views (the GitHub
    webhook) are not throttled. `conflicts` says a POST can answer 409."""

    throttle_classes = API_THROTTLES
    schema = ApiSchema()
    conflicts: bool = False

    def initial(self, request, *args, **kwargs) -> None:
        """DRF's initial() with the throttles before the permissions, so that
        requests refused for missing credentials count too (DRF checks the
        permissions first: an unauthenticated flood was never throttled)."""
        self.format_kwarg = self.get_format_suffix(**kwargs)
        negotiated = self.perform_content_negotiation(request)
        request.accepted_renderer, request.accepted_media_type = negotiated
        version, scheme = self.determine_version(request, *args, **kwargs)
        request.version, request.versioning_scheme = version, scheme
        self.perform_authentication(request)
        self.check_throttles(request)
        self.check_permissions(request)


def api_schema(**kwargs):
    """extend_schema on a view method, built on ApiSchema (extend_schema would
    otherwise start from DEFAULT_SCHEMA_CLASS as it was at import time)."""

    def decorator(method):
        method.schema = ApiSchema
        return extend_schema(**kwargs)(method)

    return decorator
