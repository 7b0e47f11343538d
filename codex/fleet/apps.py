from django.apps import AppConfig


class FleetConfig(AppConfig):
    name = "codex.fleet"
    label = "fleet"
    verbose_name = "Fleet"

    def ready(self) -> None:
        from codex.fleet.pull_requests import reconcile_pull_requests
        from codex.github.hooks import on_pull_requests

        # A pull request the GitHub sync saw merged or closed moves its agent
        # instance on (the GitHub cache imports no app above it).
        on_pull_requests(reconcile_pull_requests)
