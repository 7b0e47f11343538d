"""The tasks API under /api/: tasks with their exports, reports and actions,
and escalations."""

from django.urls import path, re_path

from codex.core.api.views import ApiRouter
from codex.tasks.api import people, views

router = ApiRouter()
router.register("tasks", views.TaskViewSet, basename="task")
router.register("escalations", views.EscalationViewSet, basename="escalation")

urlpatterns = [
    *router.urls,
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
    path(
        "escalations/<int:pk>/resolve/",
        views.EscalationResolve.as_view(),
        name="escalation-resolve",
    ),
]
