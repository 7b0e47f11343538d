"""The API's description: /api/schema/ (OpenAPI 3) and /api/docs/ (Swagger UI)."""

from django.urls import path

from codex.core.api.docs import OpenApiView, SwaggerView

urlpatterns = [
    path("schema/", OpenApiView.as_view(), name="api-schema"),
    path("docs/", SwaggerView.as_view(url_name="api-schema"), name="api-docs"),
]
