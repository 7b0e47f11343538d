from django.apps import AppConfig


class EventsConfig(AppConfig):
    name = "codex.events"
    label = "events"
    verbose_name = "Event log"
