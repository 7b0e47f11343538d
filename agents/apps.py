from django.apps import AppConfig


class AgentsConfig(AppConfig):
    """The agents as a Django app: no models, only their management commands
    (`manage.py demo`), so that codex never imports the agents to run them."""

    name = "agents"
    label = "agents"
    verbose_name = "Agents"
