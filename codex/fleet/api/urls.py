"""/api/agent-instances/ and /api/agent-runs/ (read-only)."""

from codex.core.api.views import ApiRouter
from codex.fleet.api import views

router = ApiRouter()
router.register(
    "agent-instances", views.AgentInstanceViewSet, basename="agent-instance"
)
router.register("agent-runs", views.AgentRunViewSet, basename="agent-run")

urlpatterns = router.urls
