"""The GitHub webhook receiver: deliveries stored, then processed by a worker."""

from django.apps import AppConfig


class WebhooksConfig(AppConfig):
    """App config for `codex.webhooks` (label "webhooks")."""

    name = "codex.webhooks"
    label = "webhooks"
    verbose_name = "Webhooks"
    default_auto_field = "django.db.models.BigAutoField"
