"""Pages for team members, included at the site root by codex/urls.py.

The pages are namespaced "pages"; Django's login and logout keep their global
names (`login`, `logout`), which LOGIN_URL and the auth views rely on.
"""

from django.contrib.auth import views as auth_views
from django.urls import include, path, re_path
from django.views.generic import RedirectView

from codex.tasks.pages import actions, inbox, people, views

page_patterns = [
    path("", RedirectView.as_view(pattern_name="pages:dashboard"), name="home"),
    path("dashboard/", views.dashboard, name="dashboard"),
    path("tasks/new/", views.request_form, name="request_form"),
    path("tasks/<str:task_id>/", views.task_page, name="task"),
    path("tasks/<str:task_id>/fragment/", views.task_fragment, name="task_fragment"),
    re_path(
        r"^tasks/(?P<task_id>[^/]+)/(?P<action>retry|pause|resume|cancel)/$",
        actions.task_action,
        name="task_action",
    ),
    path("tasks/<str:task_id>/gate/", people.gate_decision, name="gate_decision"),
    path("tasks/<str:task_id>/steer/", people.steer, name="steer"),
    path("inbox/", inbox.inbox, name="inbox"),
    path("inbox/<int:pk>/resolve/", inbox.resolve, name="resolve"),
]

urlpatterns = [
    # After signing in without a `next`, land on the dashboard rather than
    # Django's default /accounts/profile/, which does not exist here.
    path(
        "accounts/login/",
        auth_views.LoginView.as_view(next_page="pages:dashboard"),
        name="login",
    ),
    path(
        "accounts/logout/",
        auth_views.LogoutView.as_view(next_page="login"),
        name="logout",
    ),
    path("accounts/", include("django.contrib.auth.urls")),
    path("", include((page_patterns, "pages"))),
]
