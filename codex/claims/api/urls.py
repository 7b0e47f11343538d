from django.urls import path

from codex.claims.api import views

urlpatterns = [
    path("claims/", views.IssueClaimList.as_view(), name="claim-list"),
    path("claims/<int:pk>/", views.IssueClaimDetail.as_view(), name="claim-detail"),
    path("backlog-runs/", views.BacklogRunList.as_view(), name="backlog-run-list"),
    path(
        "backlog-runs/<int:pk>/",
        views.BacklogRunDetail.as_view(),
        name="backlog-run-detail",
    ),
]
