from django.apps import AppConfig


class ClaimsConfig(AppConfig):
    name = "codex.claims"
    label = "claims"
    verbose_name = "Claims, backlog runs and the project board"
