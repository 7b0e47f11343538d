"""The REST API under /api/: tasks, escalations, repositories, the other apps'
read-only resources, and the OpenAPI schema with its Swagger UI."""

from django.urls import include, path, re_path

from codex.tasks.api import people, views
from codex.tasks.api.schema import OpenApiView, SwaggerView

urlpatterns = [
    path("tasks/", views.TaskListCreate.as_view(), name="task-list"),
    path("tasks/<str:task_id>/", views.TaskDetail.as_view(), name="task-detail"),
    path(
        "tasks/<str:task_id>/envelope/",
        views.TaskEnvelope.as_view(),
        name="task-envelope",
    ),
    path(
        "tasks/<str:task_id>/issue-state/",
        views.TaskIssueState.as_view(),
        name="task-issue-state",
    ),
    path("tasks/<str:task_id>/events/", views.TaskEvents.as_view(), name="task-events"),
    path(
        "tasks/<str:task_id>/artifacts/",
        views.TaskArtifacts.as_view(),
        name="task-artifacts",
    ),
    path(
        "tasks/<str:task_id>/reports/", views.TaskReports.as_view(), name="task-reports"
    ),
    re_path(
        r"^tasks/(?P<task_id>[^/]+)/reports/(?P<kind>verification|review)/"
        r"report-(?P<cycle>[1-9][0-9]{0,2})\.yml$",
        views.TaskReportFile.as_view(),
        name="task-report-file",
    ),
    *[
        path(
            f"tasks/<str:task_id>/{action}/",
            views.TaskControl.as_view(action_name=action),
            name=f"task-{action}",
        )
        for action in views.TASK_ACTIONS
    ],
    path(
        "tasks/<str:task_id>/approve/",
        people.TaskGateDecision.as_view(decision="approved"),
        name="task-approve",
    ),
    path(
        "tasks/<str:task_id>/request-changes/",
        people.TaskGateDecision.as_view(decision="changes_requested"),
        name="task-request-changes",
    ),
    path("tasks/<str:task_id>/steer/", people.TaskSteer.as_view(), name="task-steer"),
    path("escalations/", views.EscalationList.as_view(), name="escalation-list"),
    path(
        "escalations/<int:pk>/",
        views.EscalationDetail.as_view(),
        name="escalation-detail",
    ),
    path(
        "escalations/<int:pk>/resolve/",
        views.EscalationResolve.as_view(),
        name="escalation-resolve",
    ),
    path("repositories/", views.RepositoryListCreate.as_view(), name="repository-list"),
    path(
        "repositories/<int:pk>/",
        views.RepositoryDetail.as_view(),
        name="repository-detail",
    ),
    path("", include("codex.fleet.api.urls")),
    path("", include("codex.claims.api.urls")),
    path("", include("codex.children.api.urls")),
    path("schema/", OpenApiView.as_view(), name="api-schema"),
    path("docs/", SwaggerView.as_view(url_name="api-schema"), name="api-docs"),
]
