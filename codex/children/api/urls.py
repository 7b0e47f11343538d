from django.urls import path

from codex.children.api import views

urlpatterns = [
    path("child-reports/", views.ChildReportList.as_view(), name="child-report-list"),
    path(
        "child-reports/<int:pk>/",
        views.ChildReportDetail.as_view(),
        name="child-report-detail",
    ),
    path(
        "child-analyses/",
        views.CompletionAnalysisList.as_view(),
        name="child-analysis-list",
    ),
    path(
        "child-analyses/<int:pk>/",
        views.CompletionAnalysisDetail.as_view(),
        name="child-analysis-detail",
    ),
]
