"""The bases of every API view: throttles, schema, filters, and the router.

An app's API is a few lines per resource (docs/architecture.md#apps): a
viewset on `ReadOnlyApiViewSet` (or `ApiViewSet` with the mixins it needs)
with a `queryset`, a `serializer_class`, a `filterset_class` and its
`permission_classes`, registered on an `ApiRouter` in the app's `api/urls.py`.
Actions that are not a resource's list or detail are `ApiMixin` APIViews.
"""

from __future__ import annotations

from rest_framework import viewsets
from rest_framework.routers import SimpleRouter

from codex.core.api.filters import FilterBackend
from codex.core.api.schema import ApiSchema
from codex.core.api.throttles import API_THROTTLES


class ApiMixin:
    """Throttles, filters and schema of every Codex API view. The throttles are
    set on the views rather than in REST_FRAMEWORK so other DRF views (the
    GitHub webhook) are not throttled. A list filters with its
    `filterset_class`; `conflicts` says a POST can answer 409."""

    throttle_classes = API_THROTTLES
    filter_backends = [FilterBackend]
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


class ApiViewSet(ApiMixin, viewsets.GenericViewSet):
    """A viewset of the API: filtered by its `filterset_class` (lists only: a
    detail answers for its id whatever the query string says), looked up by an
    integer id unless it says otherwise."""

    lookup_value_converter = "int"

    def filter_queryset(self, queryset):
        if self.action != "list":
            return queryset
        return super().filter_queryset(queryset)


class ReadOnlyApiViewSet(
    viewsets.mixins.ListModelMixin, viewsets.mixins.RetrieveModelMixin, ApiViewSet
):
    """GET list (paginated, filtered) and GET detail. Each viewset says in its
    docstring what it lists: the schema describes its operations with it."""


class ApiRouter(SimpleRouter):
    """Routes as `path()`s with converters (`agent-runs/<int:pk>/`): an id that
    is not a number is the resolver's 404, as for any unknown URL. No API root
    view (the API's entry points are in its OpenAPI schema)."""

    def __init__(self) -> None:
        super().__init__(use_regex_path=False)
