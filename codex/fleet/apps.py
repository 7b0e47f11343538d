from django.apps import AppConfig


class FleetConfig(AppConfig):
    name = "codex.fleet"
    label = "fleet"
    verbose_name = "Fleet"
