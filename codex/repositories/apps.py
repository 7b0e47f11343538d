from django.apps import AppConfig


class RepositoriesConfig(AppConfig):
    name = "codex.repositories"
    label = "repositories"
    verbose_name = "Repositories"
