from django.apps import AppConfig


class WebhooksConfig(AppConfig):
    name = "codex.webhooks"
    label = "webhooks"
    verbose_name = "Webhooks"
