from django.apps import AppConfig


class CoreConfig(AppConfig):
    name = "codex.core"
    label = "core"
    verbose_name = "Core"
