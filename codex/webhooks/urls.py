"""URLs of the webhook receiver, mounted at /api/webhooks/."""

from django.urls import path

from codex.webhooks.views import github_webhook

app_name = "webhooks"

urlpatterns = [
    path("github/", github_webhook, name="github"),
]
