"""/api/claims/ and /api/backlog-runs/ (read-only)."""

from codex.claims.api import views
from codex.core.api.views import ApiRouter

router = ApiRouter()
router.register("claims", views.IssueClaimViewSet, basename="claim")
router.register("backlog-runs", views.BacklogRunViewSet, basename="backlog-run")

urlpatterns = router.urls
