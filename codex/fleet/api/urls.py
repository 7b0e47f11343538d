from django.urls import path

from codex.fleet.api import views

urlpatterns = [
    path(
        "agent-instances/",
        views.AgentInstanceList.as_view(),
        name="agent-instance-list",
    ),
    path(
        "agent-instances/<int:pk>/",
        views.AgentInstanceDetail.as_view(),
        name="agent-instance-detail",
    ),
    path("agent-runs/", views.AgentRunList.as_view(), name="agent-run-list"),
    path(
        "agent-runs/<int:pk>/", views.AgentRunDetail.as_view(), name="agent-run-detail"
    ),
]
