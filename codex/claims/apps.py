from django.apps import AppConfig


class ClaimsConfig(AppConfig):
    name = "codex.claims"
    label = "claims"
