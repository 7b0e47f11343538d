from django.apps import AppConfig


class MonitoringConfig(AppConfig):
    name = "codex.monitoring"
    label = "monitoring"
    verbose_name = "Monitoring"
