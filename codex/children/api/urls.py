"""/api/child-reports/ and /api/child-analyses/ (read-only)."""

from codex.children.api import views
from codex.core.api.views import ApiRouter

router = ApiRouter()
router.register("child-reports", views.ChildReportViewSet, basename="child-report")
router.register(
    "child-analyses", views.CompletionAnalysisViewSet, basename="child-analysis"
)

urlpatterns = router.urls
