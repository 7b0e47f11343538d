from django.apps import AppConfig


class ConfigurationConfig(AppConfig):
    name = "codex.configuration"
    label = "configuration"
