"""/api/schema/ (OpenAPI 3) and its Swagger UI /api/docs/."""

from __future__ import annotations

from csp.constants import UNSAFE_INLINE
from csp.decorators import csp_update
from django.templatetags.static import static
from django.utils.decorators import method_decorator
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView
from rest_framework.permissions import AllowAny

from codex.core.api.schema import OPENAPI_SETTINGS, ApiSchema, api_schema
from codex.core.api.throttles import API_THROTTLES


class OpenApiView(SpectacularAPIView):
    """GET /api/schema/: OpenAPI 3 of the API; public, throttled."""

    permission_classes = [AllowAny]
    throttle_classes = API_THROTTLES
    custom_settings = OPENAPI_SETTINGS
    schema = ApiSchema()

    @api_schema(exclude=True)
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)


class SwaggerView(SpectacularSwaggerSplitView):
    """GET /api/docs/: Swagger UI from drf-spectacular-sidecar's static files,
    whatever SWAGGER_UI_DIST says: no CDN.

    The split view serves its start-up script as a file (?script), so the
    Content-Security-Policy needs no inline script; Swagger UI styles its
    elements inline, so this page alone allows inline styles.
    """

    permission_classes = [AllowAny]
    throttle_classes = API_THROTTLES
    title = OPENAPI_SETTINGS["TITLE"]
    schema = ApiSchema()

    @api_schema(exclude=True)
    @method_decorator(csp_update({"style-src": [UNSAFE_INLINE]}))
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    @staticmethod
    def _swagger_ui_resource(filename: str) -> str:
        return static(f"drf_spectacular_sidecar/swagger-ui-dist/{filename}")

    @staticmethod
    def _swagger_ui_favicon() -> str:
        return static("drf_spectacular_sidecar/swagger-ui-dist/favicon-32x32.png")
