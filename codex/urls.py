"""Top-level URLs: the admin (operator console), the API and the health check."""

from django.contrib import admin
from django.urls import include, path

from codex.core.views import bad_request, healthz, not_found, server_error
from codex.monitoring import views as monitoring

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("healthz/workers", monitoring.workers, name="worker-health"),
    path("metrics", monitoring.metrics, name="metrics"),
    path("admin/", admin.site.urls),
    path("api/webhooks/", include("codex.webhooks.urls")),
    # Each app's API, in its api/ package (docs/architecture.md#apps).
    path("api/", include("codex.tasks.api.urls")),
    path("api/", include("codex.repositories.api.urls")),
    path("api/", include("codex.fleet.api.urls")),
    path("api/", include("codex.claims.api.urls")),
    path("api/", include("codex.children.api.urls")),
    path("api/", include("codex.core.api.urls")),
    path("", include("codex.tasks.pages.urls")),
]

handler400 = bad_request
handler404 = not_found
handler500 = server_error
