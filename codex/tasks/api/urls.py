from django.urls import path

from codex.tasks.api import views

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
    *[
        path(
            f"tasks/<str:task_id>/{action}/",
            views.TaskControl.as_view(action_name=action),
            name=f"task-{action}",
        )
        for action in ("pause", "resume", "cancel")
    ],
]
