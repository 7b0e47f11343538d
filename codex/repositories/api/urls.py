"""/api/repositories/ and /api/repositories/<id>/."""

from codex.core.api.views import ApiRouter
from codex.repositories.api import views

router = ApiRouter()
router.register("repositories", views.RepositoryViewSet, basename="repository")

urlpatterns = router.urls
